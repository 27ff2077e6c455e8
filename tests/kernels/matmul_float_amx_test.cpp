// The AMX bf16 matmul for F16 / BF16 weights (kernels/matmul_float_amx.h)
// through matmul(): within fp32 rounding of the scalar reference on odd
// shapes (row-tile and token-tile tails, short rows, n = 1); a token's
// outputs are bit-identical alone and in any batch; the unit is the same for
// every n and runs only when forced. Skipped with a message without AMX-BF16.
#include "kernels/matmul_float_amx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/amx_support.h"
#include "kernels/matmul.h"
#include "kernels/matmul_unit.h"
#include "kernels/quant.h"
#include "test_support.h"

namespace strata {
namespace {

using testing::DequantWeight;
using testing::make_dequant_weight;
using testing::random_floats;
using testing::ScopedAmxMode;
using testing::ScopedIsa;

#define SKIP_WITHOUT_AMX_BF16()                                                        \
  do {                                                                                 \
    if (!amx_support().usable()) GTEST_SKIP() << "no AMX: " << amx_support().reason(); \
    if (!amx_support().cpu_has_amx_bf16) GTEST_SKIP() << "no AMX-BF16";                \
  } while (0)

TEST(MatmulFloatAmx, WithinFp32RoundingOfTheReferenceOnOddShapes) {
  SKIP_WITHOUT_AMX_BF16();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  ScopedAmxMode forced(AmxMode::kForced);
  for (DType type : {DType::kF16, DType::kBF16}) {
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      for (int64_t cols : {32, 96, 2048}) {
        for (int64_t rows : {1, 15, 17, 45}) {
          const DequantWeight w =
              make_dequant_weight(type, rows, cols, static_cast<uint32_t>(rows * 3 + cols));
          ASSERT_TRUE(amx::float_matmul_supports(w.view));
          for (int64_t n : {1, 5, 16, 17, 33}) {
            ASSERT_EQ(matmul_unit_for(w.view, n), MatmulUnit::kAmx);
            auto x = random_floats(n * cols, static_cast<uint32_t>(n * 7 + cols));
            x[0] = 3e-6f;  // an fp16 subnormal activation
            std::vector<float> got(n * rows, NAN), want(n * rows);
            matmul(w.view, x.data(), n, got.data(), pool);
            matmul_reference(w.view, x.data(), n, want.data());
            for (int64_t i = 0; i < n; ++i) {
              for (int64_t r = 0; r < rows; ++r) {
                double abs_sum = 0;
                for (int64_t c = 0; c < cols; ++c) {
                  abs_sum += std::fabs(w.dequant[r * cols + c] * x[i * cols + c]);
                }
                ASSERT_NEAR(got[i * rows + r], want[i * rows + r], 2e-5 * abs_sum + 1e-7)
                    << dtype_name(type) << " threads=" << threads << " rows=" << rows
                    << " cols=" << cols << " n=" << n << " t=" << i << " r=" << r;
              }
            }
          }
        }
      }
    }
  }
}

// A token's bits alone (n = 1) equal its bits inside a batch, at every
// place in a token tile.
TEST(MatmulFloatAmx, TokenOutputsDoNotDependOnTheBatch) {
  SKIP_WITHOUT_AMX_BF16();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  ScopedAmxMode forced(AmxMode::kForced);
  const int64_t rows = 37, cols = 160, n = 37;
  ThreadPool pool(2);
  for (DType type : {DType::kF16, DType::kBF16}) {
    const DequantWeight w = make_dequant_weight(type, rows, cols, 5);
    ASSERT_EQ(matmul_unit_for(w.view, 1), MatmulUnit::kAmx);
    const auto x = random_floats(n * cols, 6);
    std::vector<float> batch(n * rows);
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

// Not bit-identical to the AVX-512 kernel, so never chosen per n, nor by a
// measurement (which could differ between processes sharing KV): the
// AVX-512 kernel runs every n unless AMX is forced, which runs every n.
TEST(MatmulFloatAmx, TheUnitIsTheSameForEveryNAndOnlyForced) {
  SKIP_WITHOUT_AMX_BF16();
  ScopedIsa isa(KernelIsa::kAvx512Vnni);
  const DequantWeight w = make_dequant_weight(DType::kF16, 64, 256, 7);
  {
    ScopedAmxMode measured(AmxMode::kMeasured);
    clear_matmul_unit_choices();
    EXPECT_TRUE(calibrate_matmul_units({w.view}, {1, 8, 32, 512}).empty());  // not timed
    for (int64_t n : {1, 2, 16, 32, 512}) {
      EXPECT_EQ(matmul_unit_for(w.view, n), MatmulUnit::kVnni) << n;
    }
  }
  {
    ScopedAmxMode forced(AmxMode::kForced);
    for (int64_t n : {1, 2, 16, 32, 512}) {
      EXPECT_EQ(matmul_unit_for(w.view, n), MatmulUnit::kAmx) << n;
    }
  }
  const DequantWeight odd =
      make_dequant_weight(DType::kF16, 16, 48, 8);  // cols not a multiple of 32
  ScopedAmxMode forced(AmxMode::kForced);
  EXPECT_EQ(matmul_unit_for(odd.view, 64), MatmulUnit::kVnni);
}

}  // namespace
}  // namespace strata
