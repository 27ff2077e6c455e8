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

using testing::KQuantWeight;
using testing::make_kquant_weight;
using testing::make_kquant_x;
using testing::random_floats;
using testing::ScopedAmxMode;
using testing::ScopedIsa;

#define SKIP_WITHOUT_AMX()                                                             \
  do {                                                                                 \
    if (!amx_support().usable()) GTEST_SKIP() << "no AMX: " << amx_support().reason(); \
  } while (0)

const DType kKQuantTypes[] = {DType::kQ4_K, DType::kQ6_K};

TEST(MatmulKQuantAmx, BitIdenticalToVnniAndReferenceOnOddShapes) {
  SKIP_WITHOUT_AMX();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  for (DType type : kKQuantTypes) {
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      for (int64_t cols : {256, 3 * 256, 2048}) {
        for (int64_t rows : {1, 15, 17, 45}) {
          const KQuantWeight w =
              make_kquant_weight(type, rows, cols, static_cast<uint32_t>(rows * 7 + cols));
          ASSERT_TRUE(amx::kquant_matmul_supports(w.view));
          for (int64_t n : {16, 17, 33, 48, 69}) {
            if (cols == 2048 && n != 69) continue;  // the long rows once, at the odd count
            const auto x = make_kquant_x(n, cols, static_cast<uint32_t>(n * 11 + cols));
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
  for (DType type : kKQuantTypes) {
    const KQuantWeight w = make_kquant_weight(type, rows, cols, 17);
    const auto x = make_kquant_x(n, cols, 18);
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
  std::vector<KQuantWeight> weights;
  std::vector<WeightView> views;
  for (DType type : kKQuantTypes) {
    weights.push_back(make_kquant_weight(type, 64, 512, 3));
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
  const KQuantWeight w = make_kquant_weight(DType::kQ4_K, 16, 256, 4);
  EXPECT_EQ(matmul_unit_for(w.view, 512), MatmulUnit::kVnni);
}

}  // namespace
}  // namespace strata
