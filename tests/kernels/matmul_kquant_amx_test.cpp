// The AMX int8 matmul for Q4_K / Q6_K weights (kernels/matmul_kquant_amx.h)
// through matmul(): on odd shapes (row-tile and token-tile tails, odd
// super-block counts, extreme quants, scales and mins) every output is
// bit-identical to the VNNI kernel's and to the scalar reference; a token's
// outputs do not depend on the unit its batch picked; calibration measures
// the shapes. Skipped with a message on a CPU or OS without AMX.
#include "kernels/matmul_kquant_amx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/amx_support.h"
#include "kernels/matmul.h"
#include "kernels/matmul_unit.h"
#include "kernels/quant.h"
#include "test_support.h"

namespace strata {
namespace {

using testing::random_floats;
using testing::ScopedIsa;

#define SKIP_WITHOUT_AMX()                                                             \
  do {                                                                                 \
    if (!amx_support().usable()) GTEST_SKIP() << "no AMX: " << amx_support().reason(); \
  } while (0)

class ScopedAmxMode {
 public:
  explicit ScopedAmxMode(AmxMode mode) : previous_(amx_mode()) { set_amx_mode(mode); }
  ~ScopedAmxMode() { set_amx_mode(previous_); }

 private:
  AmxMode previous_;
};

struct Weight {
  std::vector<uint8_t> bytes;
  WeightView view;
};

// Random weights plus extreme blocks: Q4_K row 0 block 0 with every nibble
// 15 and every scale and min 63, the last row's block 0 with nibbles 0;
// Q6_K row 0 block 0 with quants 63 (q - 32 = 31) and scales -128, the last
// row's block 0 with quants 0 (-32) and scales 127 (p = -4064 and 4096, the
// ends of the split weight's range).
Weight make_weight(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  Weight w;
  const auto src = random_floats(rows * cols, seed, 0.1f);
  w.bytes = quantize_rows(t, src.data(), rows, cols);
  const size_t row_bytes = dtype_row_bytes(t, cols);
  uint8_t* first = w.bytes.data();
  uint8_t* last = w.bytes.data() + (rows - 1) * row_bytes;
  if (t == DType::kQ4_K) {
    auto* b0 = reinterpret_cast<BlockQ4_K*>(first);
    std::memset(b0->qs, 0xFF, sizeof(b0->qs));
    std::memset(b0->scales, 0xFF, sizeof(b0->scales));
    if (rows > 1) std::memset(reinterpret_cast<BlockQ4_K*>(last)->qs, 0x00, 128);
  } else {
    auto* b0 = reinterpret_cast<BlockQ6_K*>(first);
    std::memset(b0->ql, 0xFF, sizeof(b0->ql));
    std::memset(b0->qh, 0xFF, sizeof(b0->qh));
    std::memset(b0->scales, 0x80, sizeof(b0->scales));
    if (rows > 1) {
      auto* bl = reinterpret_cast<BlockQ6_K*>(last);
      std::memset(bl->ql, 0x00, sizeof(bl->ql));
      std::memset(bl->qh, 0x00, sizeof(bl->qh));
      std::memset(bl->scales, 0x7F, sizeof(bl->scales));
    }
  }
  w.view = {t, rows, cols, w.bytes.data(), row_bytes};
  return w;
}

std::vector<float> make_x(int64_t n, int64_t cols, uint32_t seed) {
  auto x = random_floats(n * cols, seed);
  x[0] = 5.0f;          // a block whose absmax quantizes to +127 ...
  x[cols + 1] = -5.0f;  // ... and one to -128
  return x;
}

const DType kTypes[] = {DType::kQ4_K, DType::kQ6_K};

TEST(MatmulKQuantAmx, BitIdenticalToVnniAndReferenceOnOddShapes) {
  SKIP_WITHOUT_AMX();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  for (DType type : kTypes) {
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      for (int64_t cols : {256, 3 * 256, 2048}) {
        for (int64_t rows : {1, 15, 17, 45}) {
          const Weight w = make_weight(type, rows, cols, static_cast<uint32_t>(rows * 7 + cols));
          ASSERT_TRUE(amx::kquant_matmul_supports(w.view));
          for (int64_t n : {16, 17, 33, 48, 69}) {
            if (cols == 2048 && n != 69) continue;  // the long rows once, at the odd count
            const auto x = make_x(n, cols, static_cast<uint32_t>(n * 11 + cols));
            std::vector<float> vnni(n * rows, NAN), amx(n * rows, NAN), ref(n * rows);
            {
              ScopedAmxMode off(AmxMode::kOff);
              ASSERT_EQ(matmul_unit_for(w.view, n), MatmulUnit::kVnni);
              matmul(w.view, x.data(), n, vnni.data(), pool);
            }
            {
              ScopedAmxMode forced(AmxMode::kForced);
              ASSERT_EQ(matmul_unit_for(w.view, n), MatmulUnit::kAmx);
              matmul(w.view, x.data(), n, amx.data(), pool);
            }
            matmul_reference(w.view, x.data(), n, ref.data());
            for (int64_t i = 0; i < n * rows; ++i) {
              const std::string where =
                  std::string(dtype_name(type)) + " threads=" + std::to_string(threads) +
                  " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                  " n=" + std::to_string(n) + " t=" + std::to_string(i / rows) +
                  " r=" + std::to_string(i % rows);
              ASSERT_EQ(amx[i], vnni[i]) << where;
              ASSERT_EQ(amx[i], ref[i]) << where;
            }
          }
        }
      }
    }
  }
}

// Each token alone (n = 1, the VNNI kernel's row-wise path) gives the bits
// it gets inside a batch that runs on AMX.
TEST(MatmulKQuantAmx, TokenOutputsDoNotDependOnTheUnitItsBatchPicked) {
  SKIP_WITHOUT_AMX();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  ScopedAmxMode measured(AmxMode::kMeasured);
  const int64_t rows = 37, cols = 5 * 256, n = 50;
  ThreadPool pool(2);
  for (DType type : kTypes) {
    const Weight w = make_weight(type, rows, cols, 17);
    const auto x = make_x(n, cols, 18);
    std::vector<float> batch(n * rows);
    ASSERT_EQ(matmul_unit_for(w.view, n), MatmulUnit::kAmx);  // default threshold
    matmul(w.view, x.data(), n, batch.data(), pool);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> one(rows);
      matmul(w.view, x.data() + t * cols, 1, one.data(), pool);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(batch[t * rows + r], one[r]) << dtype_name(type) << " t=" << t << " r=" << r;
      }
    }
  }
}

TEST(MatmulKQuantAmx, CalibrationMeasuresKQuantShapes) {
  SKIP_WITHOUT_AMX();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  ScopedAmxMode measured(AmxMode::kMeasured);
  clear_matmul_unit_choices();
  std::vector<Weight> weights;
  std::vector<WeightView> views;
  for (DType type : kTypes) {
    weights.push_back(make_weight(type, 64, 512, 3));
    views.push_back(weights.back().view);
  }
  const auto timings = calibrate_matmul_units(views, {1, 32});
  ASSERT_EQ(timings.size(), 2 * views.size());
  for (const UnitTiming& t : timings) {
    if (t.n >= 16) {
      EXPECT_GT(t.vnni_us, 0.0);
      EXPECT_GT(t.amx_us, 0.0);
    }
  }
  for (const WeightView& v : views) {
    EXPECT_EQ(matmul_unit_for(v, 1), MatmulUnit::kVnni);
  }
  const auto lines = matmul_unit_summary();
  ASSERT_EQ(lines.size(), views.size());
  EXPECT_NE(lines[0].find("q4_K 64x512: n=1 vnni n=32"), std::string::npos) << lines[0];
  clear_matmul_unit_choices();
}

// Without the VNNI kernel (an ISA cap), Q4_K/Q6_K never go to AMX.
TEST(MatmulKQuantAmx, CappedIsaUsesNoAmx) {
  ScopedIsa isa(KernelIsa::kAvx2);
  ScopedAmxMode forced(AmxMode::kForced);
  const Weight w = make_weight(DType::kQ4_K, 16, 256, 4);
  EXPECT_EQ(matmul_unit_for(w.view, 512), MatmulUnit::kVnni);
}

}  // namespace
}  // namespace strata
