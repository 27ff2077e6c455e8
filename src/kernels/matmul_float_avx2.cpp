// AVX2/FMA/F16C matmul for F32, F16 and BF16 weights: register tiles of 4
// rows x 2 tokens of 8-lane FMAs (see matmul_tiling_avx2.h for the tiling).
#include "kernels/matmul_float_avx2.h"

#include <immintrin.h>

#include "kernels/fp16.h"
#include "kernels/matmul_tiling_avx2.h"

namespace strata::avx2 {
namespace {

struct LoadF32 {
  static constexpr int kElemBytes = 4;
  static __m256 load8(const void* row, int64_t k) {
    return _mm256_loadu_ps(static_cast<const float*>(row) + k);
  }
  static float load1(const void* row, int64_t k) { return static_cast<const float*>(row)[k]; }
};
struct LoadF16 {
  static constexpr int kElemBytes = 2;
  static __m256 load8(const void* row, int64_t k) {
    return _mm256_cvtph_ps(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + k)));
  }
  static float load1(const void* row, int64_t k) {
    return half_to_float(static_cast<const uint16_t*>(row)[k]);
  }
};
struct LoadBF16 {
  static constexpr int kElemBytes = 2;
  static __m256 load8(const void* row, int64_t k) {
    const __m128i h =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + k));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static float load1(const void* row, int64_t k) {
    return bf16_to_fp32(static_cast<const uint16_t*>(row)[k]);
  }
};

template <class Load, int R, int T>
void float_tile(const uint8_t* const* w, const float* const* x, int64_t cols, float* out,
                int64_t out_stride, int64_t prefetch_bytes) {
  __m256 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 8 <= cols; k += 8) {
    __m256 wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(w[r]) + k * Load::kElemBytes + prefetch_bytes,
                   _MM_HINT_T0);
      wv[r] = Load::load8(w[r], k);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_loadu_ps(x[t] + k);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      float s = hsum(acc[r][t]);
      for (int64_t kk = k; kk < cols; ++kk) s += Load::load1(w[r], kk) * x[t][kk];
      out[t * out_stride + r] = s;
    }
  }
}

template <class Load>
void matmul_float(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                  float* y, int64_t r0, int64_t r1) {
  constexpr int R = 4, T = 2;
  const auto row_bytes = static_cast<int64_t>(w.row_bytes);
  drive<R, T>(
      w, x_enc, x_row_bytes, n, y, r0, r1,
      [&](int rows, int toks, const uint8_t* const* wr, const uint8_t* const* xr, float* out) {
        const float* xf[T];
#pragma GCC unroll 8
        for (int i = 0; i < toks; ++i) xf[i] = reinterpret_cast<const float*>(xr[i]);
        if (rows == R && toks == T) {
          float_tile<Load, R, T>(wr, xf, w.cols, out, w.rows, R * row_bytes);
          return;
        }
#pragma GCC unroll 8
        for (int i = 0; i < rows; ++i) {
#pragma GCC unroll 8
          for (int t = 0; t < toks; ++t) {
            float_tile<Load, 1, 1>(wr + i, xf + t, w.cols, out + t * w.rows + i, w.rows, row_bytes);
          }
        }
      });
}

}  // namespace

void encode_f16_activation_row(const float* x, int64_t cols, float* out) {
  int64_t i = 0;
  for (; i + 8 <= cols; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < cols; ++i) out[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
}

void encode_bf16_activation_row(const float* x, int64_t cols, float* out) {
  for (int64_t i = 0; i < cols; ++i) out[i] = bf16_to_fp32(fp32_to_bf16(x[i]));
}

void matmul_float_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                       float* y, int64_t row_begin, int64_t row_end) {
  switch (w.type) {
    case DType::kF32:
      matmul_float<LoadF32>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    case DType::kF16:
      matmul_float<LoadF16>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    case DType::kBF16:
      matmul_float<LoadBF16>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    default:
      return;
  }
}

}  // namespace strata::avx2
