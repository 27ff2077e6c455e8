// rms_norm, rope, silu_mul, add_bias, add_inplace: every ISA against the
// reference, and the references against plain formulas.
#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_support.h"

namespace strata {
namespace {

using testing::isas_to_test;
using testing::random_floats;
using testing::ScopedIsa;

TEST(RmsNorm, ReferenceMatchesFormula) {
  const int64_t rows = 3, dim = 37;
  const auto x = random_floats(rows * dim, 1);
  const auto w = random_floats(dim, 2);
  std::vector<float> y(rows * dim);
  ref::rms_norm(x.data(), w.data(), y.data(), rows, dim, 1e-5f);
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
    const double inv = 1.0 / std::sqrt(ss / dim + 1e-5);
    for (int64_t i = 0; i < dim; ++i) {
      EXPECT_NEAR(y[r * dim + i], x[r * dim + i] * inv * w[i], 1e-5);
    }
  }
}

TEST(RmsNorm, EveryIsaMatchesReferenceAndAliases) {
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    for (int64_t dim : {1, 7, 8, 33, 2048}) {
      const int64_t rows = 3;
      auto x = random_floats(rows * dim, 3);
      const auto w = random_floats(dim, 4);
      std::vector<float> want(rows * dim), got(rows * dim);
      ref::rms_norm(x.data(), w.data(), want.data(), rows, dim, 1e-6f);
      rms_norm(x.data(), w.data(), got.data(), rows, dim, 1e-6f);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i])));
      rms_norm(x.data(), nullptr, x.data(), rows, dim, 1e-6f);  // in place, no weight
      ref::rms_norm(want.data(), nullptr, want.data(), 0, dim, 1e-6f);
      for (int64_t r = 0; r < rows; ++r) {
        double ss = 0;
        for (int64_t i = 0; i < dim; ++i) ss += double(x[r * dim + i]) * x[r * dim + i];
        EXPECT_NEAR(ss / dim, 1.0, 1e-3) << kernel_isa_name(isa) << " dim=" << dim;
      }
    }
  }
}

// Plain formula: pair (a, b) rotated by theta_i = pos * scale * base^(-2i/rot_dim),
// with base^(-2i/rot_dim) built in fp32 by repeated multiplication, as
// llama.cpp does (the rotation itself in double).
void rope_formula(std::vector<float>& x, const std::vector<int32_t>& pos, int n_heads,
                  const RopeParams& p) {
  const float step = std::pow(p.freq_base, -2.0f / float(p.rot_dim));
  for (size_t t = 0; t < pos.size(); ++t) {
    for (int h = 0; h < n_heads; ++h) {
      float* v = x.data() + (t * n_heads + h) * p.head_dim;
      float power = float(pos[t]);
      for (int i = 0; i < p.rot_dim / 2; ++i, power *= step) {
        const double theta = double(p.freq_scale * power);
        const int a = p.style == RopeStyle::kNormal ? 2 * i : i;
        const int b = p.style == RopeStyle::kNormal ? 2 * i + 1 : i + p.rot_dim / 2;
        const double x0 = v[a], x1 = v[b];
        v[a] = float(x0 * std::cos(theta) - x1 * std::sin(theta));
        v[b] = float(x0 * std::sin(theta) + x1 * std::cos(theta));
      }
    }
  }
}

// The fp32 angles stay close to the exact ones at the positions the parity
// models use, and drift (by design, as llama.cpp's) further out.
TEST(Rope, CosSinFollowFp32AnglesCloseToExact) {
  const RopeParams p{RopeStyle::kNeox, 128, 128, 1e6f, 1.0f};
  std::vector<float> c(64), s(64);
  for (int32_t pos : {0, 1, 40, 255}) {
    rope_cos_sin(pos, p, c.data(), s.data());
    for (int i = 0; i < 64; ++i) {
      const double exact = pos * std::pow(1e6, -2.0 * i / 128);
      EXPECT_NEAR(c[i], std::cos(exact), 2e-7 * pos * (i + 1) + 1e-7) << pos << " " << i;
      EXPECT_NEAR(s[i], std::sin(exact), 2e-7 * pos * (i + 1) + 1e-7) << pos << " " << i;
    }
  }
}

TEST(Rope, BothStylesMatchFormulaOnEveryIsa) {
  const std::vector<int32_t> pos = {0, 1, 17, 511, 4095};
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
      for (int rot_dim : {64, 32, 22}) {  // full, partial, partial odd pair count
        RopeParams p{style, 64, rot_dim, 10000.0f, 0.5f};
        const int n_heads = 3;
        auto x = random_floats(pos.size() * n_heads * 64, 5);
        auto want = x, ref_out = x;
        rope_formula(want, pos, n_heads, p);
        rope(x.data(), pos.data(), static_cast<int64_t>(pos.size()), n_heads, p);
        ref::rope(ref_out.data(), pos.data(), static_cast<int64_t>(pos.size()), n_heads, p);
        for (size_t i = 0; i < x.size(); ++i) {
          ASSERT_NEAR(x[i], want[i], 1e-5) << kernel_isa_name(isa) << " i=" << i;
          ASSERT_NEAR(ref_out[i], want[i], 1e-5) << i;
        }
      }
    }
  }
}

TEST(Rope, PositionZeroIsIdentityAndDimsPastRotDimUntouched) {
  RopeParams p{RopeStyle::kNeox, 16, 8, 1e6f, 1.0f};
  const std::vector<int32_t> pos = {0, 9};
  auto x = random_floats(2 * 16, 6);
  const auto orig = x;
  rope(x.data(), pos.data(), 2, 1, p);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(x[i], orig[i]);
  for (int i = 8; i < 16; ++i) EXPECT_EQ(x[16 + i], orig[16 + i]);
  EXPECT_NE(x[16], orig[16]);
}

TEST(SiluMul, EveryIsaMatchesFormula) {
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    for (int64_t n : {1, 7, 8, 33, 5632}) {
      auto g = random_floats(n, 7, 8.0f);
      const auto u = random_floats(n, 8);
      if (n > 8) {
        g[0] = -100.0f;  // saturated tails
        g[1] = 100.0f;
        g[2] = 0.0f;
      }
      std::vector<float> out(n);
      silu_mul(g.data(), u.data(), out.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double want = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
        ASSERT_NEAR(out[i], want, 2e-6 * (std::fabs(want) + 1e-3) + 1e-30)
            << kernel_isa_name(isa) << " g=" << g[i];
      }
      silu_mul(g.data(), u.data(), g.data(), n);  // out aliases gate
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(g[i], out[i]);
    }
  }
}

TEST(AddOps, BiasAndInplace) {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};
  const std::vector<float> b = {10, 20, 30};
  add_bias(x.data(), b.data(), 2, 3);
  EXPECT_EQ(x, (std::vector<float>{11, 22, 33, 14, 25, 36}));
  std::vector<float> y = {1, 1, 1, 1, 1, 1};
  add_inplace(y.data(), x.data(), 6);
  EXPECT_EQ(y, (std::vector<float>{12, 23, 34, 15, 26, 37}));
}

}  // namespace
}  // namespace strata
