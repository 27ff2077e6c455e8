// Internal to src/kernels: what the AVX2 matmul families (matmul_avx2.cpp,
// matmul_float_avx2.cpp, matmul_kquant_avx2.cpp) share: horizontal
// reductions, loads, the int32 -> int8 pack of the activation encoders and
// the tiling driver. Include only from *_avx2.cpp files (compiled with
// -mavx2 -mfma -mf16c).
//
// Threads own contiguous ranges of weight rows; inside a range, tokens are
// processed in chunks (so a chunk's activations stay in L2) and each chunk in
// register tiles of R weight rows x T tokens, so every weight block loaded is
// used T times and every activation block R times.
//
// Everything here is static: each file that includes it keeps its own copy,
// compiled with its own -m flags (as in simd_math_avx2.h), so no copy built
// for another ISA can be picked by the linker for these kernels.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::avx2 {

// Activation rows processed per pass over a thread's weight rows, so they
// stay in L2 (512 KiB on Zen3): 64 quantized rows of 2048 (~140 KiB), 16
// fp32 rows (128 KiB).
inline constexpr int64_t kTokenChunkQuant = 64;
inline constexpr int64_t kTokenChunkFloat = 16;

static inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float hmax_abs(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float half_to_float(uint16_t h) {
  return _cvtsh_ss(h);
}

static inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// Packs 32 int32 lanes (4 vectors, each |v| <= 127) into 32 int8 in order.
static inline __m256i pack_i32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i abcd = _mm256_packs_epi16(ab, cd);
  // packs interleaves 128-bit lanes: undo with a dword permutation.
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Calls Tile<R, T>(w_rows, x_rows, ...) over rows [r0, r1) x tokens [0, n).
template <int RMax, int TMax, class TileFn>
static void drive(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                  float* y, int64_t r0, int64_t r1, TileFn tile) {
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const int64_t chunk = x_row_bytes >= static_cast<size_t>(w.cols) * sizeof(float)
                            ? kTokenChunkFloat
                            : kTokenChunkQuant;
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t t1 = std::min(n, t0 + chunk);
    for (int64_t r = r0; r < r1; r += RMax) {
      const int rows = static_cast<int>(std::min<int64_t>(RMax, r1 - r));
      const uint8_t* w_rows[RMax] = {};
#pragma GCC unroll 8
      for (int i = 0; i < rows; ++i) w_rows[i] = wd + static_cast<size_t>(r + i) * w.row_bytes;
      for (int64_t t = t0; t < t1; t += TMax) {
        const int toks = static_cast<int>(std::min<int64_t>(TMax, t1 - t));
        const uint8_t* x_rows[TMax] = {};
#pragma GCC unroll 8
        for (int i = 0; i < toks; ++i) x_rows[i] = x_enc + static_cast<size_t>(t + i) * x_row_bytes;
        tile(rows, toks, w_rows, x_rows, y + t * w.rows + r);
      }
    }
  }
}

}  // namespace strata::avx2
