// quantize_rows -> dequantize_row error bounds per type, determinism, and the
// activation quantizers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "test_support.h"

namespace strata {
namespace {

using testing::random_floats;

struct Stats {
  double max_err_over_block_amax = 0;  // max |x - x'| / amax of the element's block
  double rel_rmse = 0;                 // rms(x - x') / rms(x)
};

Stats roundtrip(DType t, const std::vector<float>& x, int64_t rows, int64_t cols) {
  const int block = static_cast<int>(dtype_traits(t).block_elems);
  const int err_block = std::max(block, 32);
  std::vector<uint8_t> q = quantize_rows(t, x.data(), rows, cols);
  EXPECT_EQ(q.size(), dtype_row_bytes(t, cols) * rows);
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(t, q.data() + r * dtype_row_bytes(t, cols), y.data() + r * cols, cols);
  }
  Stats s;
  double se = 0, sx = 0;
  for (size_t b = 0; b < x.size(); b += err_block) {
    float amax = 0;
    for (int i = 0; i < err_block; ++i) amax = std::max(amax, std::fabs(x[b + i]));
    for (int i = 0; i < err_block; ++i) {
      const double e = std::fabs(static_cast<double>(x[b + i]) - y[b + i]);
      se += e * e;
      sx += static_cast<double>(x[b + i]) * x[b + i];
      if (amax > 0) s.max_err_over_block_amax = std::max(s.max_err_over_block_amax, e / amax);
    }
  }
  s.rel_rmse = std::sqrt(se / sx);
  return s;
}

TEST(QuantRoundTrip, ErrorBoundsPerType) {
  const int64_t rows = 3, cols = 7 * 256;
  const auto x = random_floats(rows * cols, 7, 0.05f);
  struct Case {
    DType t;
    double max_err;   // bound on max_err_over_block_amax
    double max_rmse;  // bound on rel_rmse
  };
  // Q8_0: half a step of amax/127 (+ f16 scale rounding). Q4_0: one step of
  // amax/8 on the side opposite the extreme. F16/BF16: half an ulp relative.
  const Case cases[] = {
      {DType::kF32, 0.0, 0.0},
      {DType::kF16, 1.0 / 2048, 1.0 / 2048},
      {DType::kBF16, 1.0 / 256, 1.0 / 256},
      {DType::kQ8_0, 0.5 / 127 + 1e-3, 0.01},
      {DType::kQ4_0, 1.0 / 8 + 1e-3, 0.12},
      {DType::kQ4_K, 1.0 / 15 + 0.02, 0.08},
      {DType::kQ6_K, 1.0 / 63 + 0.01, 0.025},
  };
  for (const Case& c : cases) {
    const Stats s = roundtrip(c.t, x, rows, cols);
    EXPECT_LE(s.max_err_over_block_amax, c.max_err) << dtype_name(c.t);
    EXPECT_LE(s.rel_rmse, c.max_rmse) << dtype_name(c.t);
  }
}

TEST(QuantRoundTrip, ConstantAndZeroBlocks) {
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    std::vector<float> x(256, 0.0f);
    std::vector<float> y(256, 1.0f);
    auto q = quantize_rows(t, x.data(), 1, 256);
    dequantize_row(t, q.data(), y.data(), 256);
    for (float v : y) ASSERT_EQ(v, 0.0f) << dtype_name(t);
    std::fill(x.begin(), x.end(), -0.75f);
    q = quantize_rows(t, x.data(), 1, 256);
    dequantize_row(t, q.data(), y.data(), 256);
    for (float v : y) ASSERT_NEAR(v, -0.75f, 0.75f * 0.01) << dtype_name(t);
  }
}

TEST(QuantRoundTrip, Deterministic) {
  const auto x = random_floats(2 * 512, 11);
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K, DType::kF16}) {
    EXPECT_EQ(quantize_rows(t, x.data(), 2, 512), quantize_rows(t, x.data(), 2, 512));
  }
}

TEST(QuantRoundTrip, Q4_KPositiveOnlySubBlockUsesZeroMin) {
  // All-positive data: min must clamp to 0 and the scale still covers the max.
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = 1.0f + static_cast<float>(i % 32) / 8.0f;
  auto q = quantize_rows(DType::kQ4_K, x.data(), 1, 256);
  std::vector<float> y(256);
  dequantize_row(DType::kQ4_K, q.data(), y.data(), 256);
  for (int i = 0; i < 256; ++i) EXPECT_NEAR(y[i], x[i], 0.2f) << i;
}

TEST(ActivationQuant, Q8_KBsumsBsums32AndScale) {
  const auto x = random_floats(512, 5);
  std::vector<BlockQ8_K> q(2);
  quantize_row_q8_k(x.data(), q.data(), 512);
  for (int b = 0; b < 2; ++b) {
    float amax = 0;
    for (int i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(x[b * 256 + i]));
    EXPECT_NEAR(q[b].d, amax / 127, 1e-6 * amax);
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += q[b].qs[16 * g + i];
      EXPECT_EQ(q[b].bsums[g], sum);
    }
    for (int k = 0; k < 8; ++k) {
      int sum = 0;
      for (int i = 0; i < 32; ++i) sum += q[b].qs[32 * k + i];
      EXPECT_EQ(q[b].bsums32[k], sum);
    }
    for (int i = 0; i < 256; ++i) {
      EXPECT_NEAR(q[b].d * q[b].qs[i], x[b * 256 + i], 0.5f * q[b].d + 1e-6f);
    }
  }
}

TEST(ActivationQuant, Q8_0) {
  const auto x = random_floats(96, 9);
  std::vector<BlockQ8_0> q(3);
  quantize_row_q8_0(x.data(), q.data(), 96);
  for (int b = 0; b < 3; ++b) {
    const float d = fp16_to_fp32(q[b].d);
    for (int i = 0; i < 32; ++i) EXPECT_NEAR(d * q[b].qs[i], x[b * 32 + i], 0.51f * d);
  }
}

}  // namespace
}  // namespace strata
