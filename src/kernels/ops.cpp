#include "kernels/ops.h"

#include <cmath>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/ops_avx2.h"

namespace strata {

void rope_cos_sin(int32_t position, const RopeParams& p, float* cos_out, float* sin_out) {
  // As llama.cpp: theta_i = position * base^(-2i/rot_dim) built by repeated
  // fp32 multiplication, and fp32 cosf/sinf. Computing the angles in double
  // instead moves them by up to ~1e-4 rad at position 40 (the fp32 product
  // drifts by ~i ulp), which shows in the logits; matching wins.
  const int half = p.rot_dim / 2;
  const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.rot_dim));
  float theta = static_cast<float>(position);
  for (int i = 0; i < half; ++i) {
    const float angle = p.freq_scale * theta;
    cos_out[i] = std::cos(angle);
    sin_out[i] = std::sin(angle);
    theta *= theta_scale;
  }
}

namespace ref {

void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    // Squares rounded to fp32, summed in double (as llama.cpp).
    double sum_sq = 0.0;
    for (int64_t i = 0; i < dim; ++i) sum_sq += static_cast<double>(xr[i] * xr[i]);
    const float scale =
        1.0f / std::sqrt(static_cast<float>(sum_sq / static_cast<double>(dim)) + eps);
    for (int64_t i = 0; i < dim; ++i) yr[i] = xr[i] * scale * (w ? w[i] : 1.0f);
  }
}

void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, const RopeParams& p) {
  const int half = p.rot_dim / 2;
  std::vector<float> cos_sin(2 * static_cast<size_t>(half));
  for (int64_t t = 0; t < n_tokens; ++t) {
    rope_cos_sin(positions[t], p, cos_sin.data(), cos_sin.data() + half);
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * p.head_dim;
      for (int i = 0; i < half; ++i) {
        const float c = cos_sin[i], s = cos_sin[half + i];
        const int i0 = p.style == RopeStyle::kNormal ? 2 * i : i;
        const int i1 = p.style == RopeStyle::kNormal ? 2 * i + 1 : i + half;
        const float x0 = v[i0], x1 = v[i1];
        v[i0] = x0 * c - x1 * s;
        v[i1] = x0 * s + x1 * c;
      }
    }
  }
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

}  // namespace ref

void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t dim, float eps) {
  if (kernel_isa_has_avx2(kernel_isa())) {
    avx2::rms_norm(x, w, y, n_rows, dim, eps);
  } else {
    ref::rms_norm(x, w, y, n_rows, dim, eps);
  }
}

void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, const RopeParams& p) {
  // cos/sin depend only on the position and the pair, so compute them once
  // per token and apply them to every head.
  const int half = p.rot_dim / 2;
  thread_local std::vector<float> cos_sin;
  cos_sin.resize(2 * static_cast<size_t>(half));
  for (int64_t t = 0; t < n_tokens; ++t) {
    rope_cos_sin(positions[t], p, cos_sin.data(), cos_sin.data() + half);
    const float* c = cos_sin.data();
    const float* s = cos_sin.data() + half;
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * p.head_dim;
      if (p.style == RopeStyle::kNeox) {
        if (kernel_isa_has_avx2(kernel_isa())) {
          avx2::rope_neox_head(v, c, s, half);
          continue;
        }
        for (int i = 0; i < half; ++i) {
          const float x0 = v[i], x1 = v[i + half];
          v[i] = x0 * c[i] - x1 * s[i];
          v[i + half] = x0 * s[i] + x1 * c[i];
        }
      } else {
        for (int i = 0; i < half; ++i) {
          const float x0 = v[2 * i], x1 = v[2 * i + 1];
          v[2 * i] = x0 * c[i] - x1 * s[i];
          v[2 * i + 1] = x0 * s[i] + x1 * c[i];
        }
      }
    }
  }
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  if (kernel_isa_has_avx2(kernel_isa())) {
    avx2::silu_mul(gate, up, out, n);
  } else {
    ref::silu_mul(gate, up, out, n);
  }
}

void add_bias(float* x, const float* b, int64_t n_rows, int64_t dim) {
  for (int64_t r = 0; r < n_rows; ++r) {
    float* xr = x + r * dim;
    for (int64_t i = 0; i < dim; ++i) xr[i] += b[i];
  }
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace strata
