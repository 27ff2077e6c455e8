#include "kernels/ops_avx2.h"

#include <immintrin.h>

#include <cmath>

#include "kernels/simd_math_avx2.h"

namespace strata::avx2 {

void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t dim, float eps) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    // Squares rounded to fp32 and summed in double, as the reference does
    // (only the summation order differs), so long rows lose no precision.
    __m256d acc0 = _mm256_setzero_pd(), acc1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= dim; i += 8) {
      const __m256 v = _mm256_loadu_ps(xr + i);
      const __m256 sq = _mm256_mul_ps(v, v);
      acc0 = _mm256_add_pd(acc0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
      acc1 = _mm256_add_pd(acc1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    }
    acc0 = _mm256_add_pd(acc0, acc1);
    alignas(32) double parts[4];
    _mm256_store_pd(parts, acc0);
    double sum_sq = (parts[0] + parts[1]) + (parts[2] + parts[3]);
    for (; i < dim; ++i) sum_sq += static_cast<double>(xr[i] * xr[i]);
    const float scale =
        1.0f / std::sqrt(static_cast<float>(sum_sq / static_cast<double>(dim)) + eps);
    const __m256 vs = _mm256_set1_ps(scale);
    i = 0;
    if (w) {
      for (; i + 8 <= dim; i += 8) {
        _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), vs),
                                               _mm256_loadu_ps(w + i)));
      }
      for (; i < dim; ++i) yr[i] = xr[i] * scale * w[i];
    } else {
      for (; i + 8 <= dim; i += 8)
        _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_loadu_ps(xr + i), vs));
      for (; i < dim; ++i) yr[i] = xr[i] * scale;
    }
  }
}

void silu_mul(const float* gate, const float* up, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = exp256(_mm256_xor_ps(g, sign));
    const __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void rope_neox_head(float* v, const float* c, const float* s, int half) {
  int i = 0;
  for (; i + 8 <= half; i += 8) {
    const __m256 x0 = _mm256_loadu_ps(v + i), x1 = _mm256_loadu_ps(v + i + half);
    const __m256 vc = _mm256_loadu_ps(c + i), vs = _mm256_loadu_ps(s + i);
    _mm256_storeu_ps(v + i, _mm256_fmsub_ps(x0, vc, _mm256_mul_ps(x1, vs)));
    _mm256_storeu_ps(v + i + half, _mm256_fmadd_ps(x0, vs, _mm256_mul_ps(x1, vc)));
  }
  for (; i < half; ++i) {
    const float x0 = v[i], x1 = v[i + half];
    v[i] = x0 * c[i] - x1 * s[i];
    v[i + half] = x0 * s[i] + x1 * c[i];
  }
}

}  // namespace strata::avx2
