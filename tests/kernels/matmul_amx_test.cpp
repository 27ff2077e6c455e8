// The AMX int8 matmul for kTiled16 Q4_0 / Q8_0 weights: its tile
// configuration really lands (the GCC 12 dead-store hazard), it is
// bit-identical to the VNNI kernel and to the scalar order on odd shapes
// (row tails, token tails, odd block counts, extreme quants), and a token's
// outputs do not depend on which unit its batch picked. Skipped with a
// message on a CPU or OS without AMX.
#include "kernels/matmul_amx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "kernels/amx_support.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/matmul_unit.h"
#include "kernels/packed_weight.h"
#include "kernels/quant.h"
#include "kernels/roofline.h"
#include "kernels/vec_dot.h"
#include "test_support.h"

namespace strata {
namespace {

using testing::q8_0_dot_fma_order;
using testing::random_floats;
using testing::ScopedAmxMode;
using testing::ScopedIsa;

#define SKIP_WITHOUT_AMX()                                                             \
  do {                                                                                 \
    if (!amx_support().usable()) GTEST_SKIP() << "no AMX: " << amx_support().reason(); \
  } while (0)

TEST(MatmulAmx, SupportIsReportedConsistently) {
  const AmxSupport& s = amx_support();
  if (s.usable()) {
    EXPECT_STREQ(s.reason(), "");
    EXPECT_NE(amx_mode(), AmxMode::kOff);
  } else {
    EXPECT_STRNE(s.reason(), "");
    EXPECT_EQ(amx_mode(), AmxMode::kOff);
    EXPECT_EQ(set_amx_mode(AmxMode::kForced), AmxMode::kOff);
  }
}

TEST(MatmulAmx, TileConfigurationLandsOnEveryThread) {
  SKIP_WITHOUT_AMX();
  EXPECT_TRUE(amx::configure_thread_tiles());
  bool other = false;
  std::thread t([&] { other = amx::configure_thread_tiles(); });
  t.join();
  EXPECT_TRUE(other);
}

// The weight in the layout the loader builds.
struct TestWeight {
  std::vector<uint8_t> gguf;
  WeightView gguf_view;
  std::unique_ptr<PackedWeight> packed;
};

TestWeight make_packed_weight(DType type, int64_t rows, int64_t cols, uint32_t seed) {
  TestWeight tw;
  const auto src = random_floats(rows * cols, seed, 0.1f);
  tw.gguf = quantize_rows(type, src.data(), rows, cols);
  const size_t row_bytes = dtype_row_bytes(type, cols);
  if (type == DType::kQ8_0) {
    // Extreme quants: -128 (valid in a file, never made by the quantizer) and 127.
    auto* first = reinterpret_cast<BlockQ8_0*>(tw.gguf.data());
    std::memset(first->qs, 0x80, sizeof(first->qs));
    first->qs[3] = 127;
  } else {
    auto* first = reinterpret_cast<BlockQ4_0*>(tw.gguf.data());
    std::memset(first->qs, 0x00, sizeof(first->qs));
    auto* last = reinterpret_cast<BlockQ4_0*>(tw.gguf.data() + (rows - 1) * row_bytes);
    if (rows > 1) std::memset(last->qs, 0xFF, sizeof(last->qs));
  }
  tw.gguf_view = WeightView{type, rows, cols, tw.gguf.data(), row_bytes};
  tw.packed = PackedWeight::pack(tw.gguf_view);
  return tw;
}

TEST(MatmulAmx, BitIdenticalToVnniAndScalarOrderOnOddShapes) {
  SKIP_WITHOUT_AMX();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  for (DType type : {DType::kQ8_0, DType::kQ4_0}) {
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (int64_t cols : {32, 3 * 32, 2048}) {
        for (int64_t rows : {1, 15, 16, 17, 45}) {
          TestWeight tw =
              make_packed_weight(type, rows, cols, static_cast<uint32_t>(rows * 5 + cols));
          ASSERT_NE(tw.packed, nullptr);
          const WeightView& w = tw.packed->view();
          ASSERT_TRUE(amx::matmul_supports(w));
          for (int64_t n : {16, 17, 31, 32, 48, 69}) {
            auto x = random_floats(n * cols, static_cast<uint32_t>(n * 13 + cols));
            x[0] = -5.0f;    // a block whose absmax quantizes to -127 ...
            x[cols] = 5.0f;  // ... and one to +127
            std::vector<float> vnni(n * rows, NAN), amx(n * rows, NAN), ref(n * rows);
            {
              ScopedAmxMode off(AmxMode::kOff);
              ASSERT_EQ(matmul_unit_for(w, n), MatmulUnit::kVnni);
              matmul(w, x.data(), n, vnni.data(), pool);
            }
            {
              ScopedAmxMode forced(AmxMode::kForced);
              ASSERT_EQ(matmul_unit_for(w, n), MatmulUnit::kAmx);
              matmul(w, x.data(), n, amx.data(), pool);
            }
            matmul_reference(tw.gguf_view, x.data(), n, ref.data());
            std::vector<BlockQ8_0> xq(cols / kQK8_0);
            for (int64_t t = 0; t < n; ++t) {
              vec_dot::encode_activation_row(DType::kQ8_0, x.data() + t * cols, cols, xq.data());
              for (int64_t r = 0; r < rows; ++r) {
                const int64_t i = t * rows + r;
                const std::string where =
                    std::string(dtype_name(type)) + " threads=" + std::to_string(threads) +
                    " rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) +
                    " n=" + std::to_string(n) + " t=" + std::to_string(t) +
                    " r=" + std::to_string(r);
                ASSERT_EQ(amx[i], vnni[i]) << where;
                if (type == DType::kQ4_0) {
                  ASSERT_EQ(amx[i], ref[i]) << where;  // Q4_0 shares dot_ref's order
                } else {
                  const auto* wr = reinterpret_cast<const BlockQ8_0*>(
                      tw.gguf.data() + static_cast<size_t>(r) * tw.gguf_view.row_bytes);
                  ASSERT_EQ(amx[i], q8_0_dot_fma_order(wr, xq.data(), cols / kQK8_0)) << where;
                  ASSERT_NEAR(amx[i], ref[i], 1e-4 * (1.0 + std::fabs(ref[i]))) << where;
                }
              }
            }
          }
        }
      }
    }
  }
}

// Batch invariance across units: each token alone (n = 1, the VNNI
// kernel) gives the bits it gets inside a batch that runs on AMX.
TEST(MatmulAmx, TokenOutputsDoNotDependOnTheUnitItsBatchPicked) {
  SKIP_WITHOUT_AMX();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  ScopedAmxMode measured(AmxMode::kMeasured);
  const int64_t rows = 53, cols = 9 * 32, n = 70;
  ThreadPool pool(2);
  for (DType type : {DType::kQ8_0, DType::kQ4_0}) {
    TestWeight tw = make_packed_weight(type, rows, cols, 91);
    const WeightView& w = tw.packed->view();
    const auto x = random_floats(n * cols, 92);
    std::vector<float> batch(n * rows);
    ASSERT_EQ(matmul_unit_for(w, n), MatmulUnit::kAmx);  // default threshold, nothing measured
    matmul(w, x.data(), n, batch.data(), pool);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> one(rows);
      matmul(w, x.data() + t * cols, 1, one.data(), pool);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_EQ(batch[t * rows + r], one[r]) << dtype_name(type) << " t=" << t << " r=" << r;
      }
    }
  }
}

TEST(MatmulAmx, CalibrationRecordsAChoicePerShapeAndCount) {
  SKIP_WITHOUT_AMX();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  ScopedAmxMode measured(AmxMode::kMeasured);
  clear_matmul_unit_choices();
  TestWeight tw = make_packed_weight(DType::kQ8_0, 64, 256, 5);
  TestWeight dup = make_packed_weight(DType::kQ8_0, 64, 256, 6);  // same shape: timed once
  const auto timings = calibrate_matmul_units({tw.packed->view(), dup.packed->view()}, {1, 8, 32});
  ASSERT_EQ(timings.size(), 3u);
  for (const UnitTiming& t : timings) {
    if (t.n < 16) {
      EXPECT_EQ(t.unit, MatmulUnit::kVnni);  // no whole token tile: not timed
      EXPECT_EQ(t.amx_us, 0.0);
    } else {
      EXPECT_GT(t.vnni_us, 0.0);
      EXPECT_GT(t.amx_us, 0.0);
    }
    EXPECT_EQ(matmul_unit_for(tw.packed->view(), t.n), t.unit);
  }
  EXPECT_TRUE(calibrate_matmul_units({tw.packed->view()}, {1, 8, 32}).empty());  // known
  const auto lines = matmul_unit_summary();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("q8_0 64x256: n=1 vnni"), std::string::npos) << lines[0];
  clear_matmul_unit_choices();
  EXPECT_EQ(matmul_unit_for(tw.packed->view(), 32), MatmulUnit::kAmx);  // back to the default
}

TEST(MatmulAmx, RooflineReportsTheTileUnitPeakOnlyWithAmx) {
  ThreadPool pool(1);
  const double gops = measure_peak_amx_int8_gops(pool);
  if (amx_support().usable()) {
    EXPECT_GT(gops, 0.0);
  } else {
    EXPECT_EQ(gops, 0.0);
  }
}

TEST(MatmulAmx, OffModeAndGgufWeightsUseVnni) {
  ScopedAmxMode off(AmxMode::kOff);
  TestWeight tw = make_packed_weight(DType::kQ8_0, 16, 64, 3);
  EXPECT_EQ(matmul_unit_for(tw.gguf_view, 512), MatmulUnit::kVnni);
  if (tw.packed) {
    EXPECT_EQ(matmul_unit_for(tw.packed->view(), 512), MatmulUnit::kVnni);
  }
  const auto lines = matmul_unit_summary();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("amx off"), std::string::npos) << lines[0];
}

}  // namespace
}  // namespace strata
