// AVX2/F16C steps of paged attention: a block's K (or V) rows are converted
// to fp32 once and shared by every query head of the group; scores for 8
// positions are reduced together with a horizontal-add tree.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "kernels/attention_block.h"
#include "kernels/simd_math_avx2.h"

namespace strata::avx2 {
namespace {

inline void f16_row_to_f32(const uint16_t* src, float* dst, int n) {
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(dst + i,
                     _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
  for (; i < n; ++i) dst[i] = _cvtsh_ss(src[i]);
}

inline float round_fp16(float x) {
  return _cvtsh_ss(_cvtss_sh(x, _MM_FROUND_TO_NEAREST_INT));
}

// Sums of each of 8 vectors, as one vector (lane j = sum of v[j]).
inline __m256 hsum8(const __m256* v) {
  const __m256 s01 = _mm256_hadd_ps(v[0], v[1]);
  const __m256 s23 = _mm256_hadd_ps(v[2], v[3]);
  const __m256 s45 = _mm256_hadd_ps(v[4], v[5]);
  const __m256 s67 = _mm256_hadd_ps(v[6], v[7]);
  const __m256 s0123 = _mm256_hadd_ps(s01, s23);  // [0 1 2 3 | 0 1 2 3] halves
  const __m256 s4567 = _mm256_hadd_ps(s45, s67);
  const __m256 lo = _mm256_permute2f128_ps(s0123, s4567, 0x20);
  const __m256 hi = _mm256_permute2f128_ps(s0123, s4567, 0x31);
  return _mm256_add_ps(lo, hi);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float dot(const float* a, const float* b, int n) {
  __m256 acc = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float sum = hsum(acc);
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

}  // namespace

void round_to_fp16(const float* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = round_fp16(src[i]);
}

void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m128i lo = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    const __m128i hi = _mm256_cvtps_ph(_mm256_loadu_ps(src + i + 8), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_set_m128i(hi, lo));
  }
  for (; i < n; ++i) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

void softmax_weights(float* s, int64_t n) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(s + j));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(vmax), _mm256_extractf128_ps(vmax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
  float max_score = _mm_cvtss_f32(m4);
  for (; j < n; ++j) max_score = std::max(max_score, s[j]);
  // Exps summed 8 at a time in fp32, the partial sums in double (llama.cpp's
  // order for its AVX2 softmax).
  const __m256 vm = _mm256_set1_ps(max_score);
  double sum = 0.0;
  j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
    _mm256_storeu_ps(s + j, e);
    sum += hsum(e);
  }
  for (; j < n; ++j) {
    s[j] = std::exp(s[j] - max_score);
    sum += s[j];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  const __m256 vinv = _mm256_set1_ps(inv_sum);
  j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(s + j), vinv);
    _mm256_storeu_ps(s + j, _mm256_cvtph_ps(_mm256_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT)));
  }
  for (; j < n; ++j) s[j] = round_fp16(s[j] * inv_sum);
}

void score_block(const AttendBlockArgs& a) {
  const int hd = a.head_dim, n = a.n;
  float* kf = a.kv_f32;             // [n][hd]
  f16_row_to_f32(a.k, kf, n * hd);  // the block's rows are contiguous
  const bool is_vec_dim = hd % 8 == 0;
  for (int h = 0; h < a.group; ++h) {
    const float* qh = a.q + h * hd;
    float* s = a.scores + h * a.score_stride;
    int j = 0;
    if (is_vec_dim) {
      for (; j + 8 <= n; j += 8) {
        __m256 acc[8];
#pragma GCC unroll 8
        for (int u = 0; u < 8; ++u) acc[u] = _mm256_setzero_ps();
#pragma GCC unroll 2
        for (int i = 0; i < hd; i += 8) {
          const __m256 qv = _mm256_loadu_ps(qh + i);
#pragma GCC unroll 8
          for (int u = 0; u < 8; ++u) {
            acc[u] = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kf + (j + u) * hd + i), acc[u]);
          }
        }
        _mm256_storeu_ps(s + j, _mm256_mul_ps(hsum8(acc), _mm256_set1_ps(a.scale)));
      }
    }
    for (; j < n; ++j) s[j] = a.scale * dot(qh, kf + j * hd, hd);
  }
}

void accumulate_block(const AttendBlockArgs& a) {
  const int hd = a.head_dim, n = a.n;
  float* vf = a.kv_f32;  // [n][hd]
  f16_row_to_f32(a.v, vf, n * hd);
  for (int h = 0; h < a.group; ++h) {
    const float* s = a.scores + h * a.score_stride;
    float* acc = a.acc + h * hd;
    // acc += sum_j s_j v_j, 64 dims at a time so the FMAs over j form 8
    // independent chains.
    int i = 0;
    for (; i + 64 <= hd; i += 64) {
      __m256 o[8];
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) o[u] = _mm256_loadu_ps(acc + i + 8 * u);
      for (int j = 0; j < n; ++j) {
        const __m256 p = _mm256_set1_ps(s[j]);
        const float* vr = vf + j * hd + i;
#pragma GCC unroll 8
        for (int u = 0; u < 8; ++u) o[u] = _mm256_fmadd_ps(p, _mm256_loadu_ps(vr + 8 * u), o[u]);
      }
#pragma GCC unroll 8
      for (int u = 0; u < 8; ++u) _mm256_storeu_ps(acc + i + 8 * u, o[u]);
    }
    for (; i + 8 <= hd; i += 8) {
      __m256 o = _mm256_loadu_ps(acc + i);
      for (int j = 0; j < n; ++j) {
        o = _mm256_fmadd_ps(_mm256_set1_ps(s[j]), _mm256_loadu_ps(vf + j * hd + i), o);
      }
      _mm256_storeu_ps(acc + i, o);
    }
    for (; i < hd; ++i) {
      float o = acc[i];
      for (int j = 0; j < n; ++j) o += s[j] * vf[j * hd + i];
      acc[i] = o;
    }
  }
}

}  // namespace strata::avx2
