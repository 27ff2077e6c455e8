// AVX2/FMA/F16C matmul for Q4_K and Q6_K weights, one weight row x up to 4
// tokens per register tile (see matmul_tiling_avx2.h for the tiling). The
// weights are unsigned after unpacking, so maddubs(q, x) works directly and
// the offsets (Q4_K mins, Q6_K's -32) come from the Q8_K block sums.
#include "kernels/matmul_kquant_avx2.h"

#include <immintrin.h>

#include <cstring>

#include "kernels/matmul_tiling_avx2.h"

namespace strata::avx2 {
namespace {

// Prefetches the block at the same position of the next weight row.
template <class Block>
inline void prefetch_next_row(const Block* blk, int64_t row_bytes) {
  const char* p = reinterpret_cast<const char*>(blk) + row_bytes;
  for (size_t off = 0; off < sizeof(Block); off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
}

// Unpacks the 8 six-bit scales and mins of a Q4_K block at once (the same
// bits as q4_k_scale_min, four sub-blocks per 32-bit word).
inline void q4_k_unpack_scales(const uint8_t* packed, uint8_t* sc, uint8_t* mn) {
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t sc_lo = u[0] & 0x3f3f3f3fu;
  const uint32_t mn_lo = u[1] & 0x3f3f3f3fu;
  const uint32_t sc_hi = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
  const uint32_t mn_hi = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
  std::memcpy(sc, &sc_lo, 4);
  std::memcpy(sc + 4, &sc_hi, 4);
  std::memcpy(mn, &mn_lo, 4);
  std::memcpy(mn + 4, &mn_hi, 4);
}

// Per token and block, the integer sums of each pair of sub-blocks (64
// elements) are scaled and accumulated in fp32 one pair at a time with a
// fused multiply-add, in the order llama.cpp's repacked Q4_K GEMM uses, so
// that both round alike. The scaled sums and the min terms travel together
// in lanes 0 and 1 of one accumulator.
template <int T>
void q4_k_tile(const uint8_t* w_row, const uint8_t* const* x, int64_t nb, float* out,
               int64_t out_stride, int64_t row_bytes) {
  __m128 acc[T];  // [sum, min, -, -]
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
  const auto* wb = reinterpret_cast<const BlockQ4_K*>(w_row);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ4_K& blk = wb[b];
    prefetch_next_row(&blk, row_bytes);
    alignas(8) uint8_t sc[8], mn[8];
    q4_k_unpack_scales(blk.scales, sc, mn);
    // [m0, m0, m1, m1, ...] as int16: madd with the 16 bsums gives
    // m_j * (bsums[2j] + bsums[2j+1]) per lane.
    const __m128i mn8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn));
    const __m256i mn16 = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(mn8, mn8));
    __m256i q[8];
#pragma GCC unroll 8
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = load256(blk.qs + 32 * c);
      q[2 * c] = _mm256_and_si256(raw, low4);
      q[2 * c + 1] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    }
    const __m128 d_dmin = _mm_setr_ps(half_to_float(blk.d), half_to_float(blk.dmin), 0.0f, 0.0f);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x[t])[b];
      __m256i pair[4];
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m256i p0 = _mm256_maddubs_epi16(q[2 * c], load256(xb.qs + 64 * c));
        const __m256i p1 = _mm256_maddubs_epi16(q[2 * c + 1], load256(xb.qs + 64 * c + 32));
        pair[c] = _mm256_add_epi32(_mm256_madd_epi16(p0, _mm256_set1_epi16(sc[2 * c])),
                                   _mm256_madd_epi16(p1, _mm256_set1_epi16(sc[2 * c + 1])));
      }
      const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(pair[0], pair[1]),
                                          _mm256_hadd_epi32(pair[2], pair[3]));
      const __m128i sums = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
      // Lane j of msum: sub-block j's min term; pairs are adjacent lanes.
      const __m256i msum = _mm256_madd_epi16(mn16, load256(xb.bsums));
      const __m256i mh = _mm256_hadd_epi32(msum, msum);  // [m01 m23 . . | m45 m67 . .]
      const __m128i mins =
          _mm_unpacklo_epi64(_mm256_castsi256_si128(mh), _mm256_extracti128_si256(mh, 1));
      const __m128 f01 = _mm_cvtepi32_ps(_mm_unpacklo_epi32(sums, mins));  // [s0 m0 s1 m1]
      const __m128 f23 = _mm_cvtepi32_ps(_mm_unpackhi_epi32(sums, mins));  // [s2 m2 s3 m3]
      const __m128 scale = _mm_mul_ps(d_dmin, _mm_set1_ps(xb.d));          // [d dx, dmin dx]
      acc[t] = _mm_fmadd_ps(f01, scale, acc[t]);
      acc[t] = _mm_fmadd_ps(_mm_movehl_ps(f01, f01), scale, acc[t]);
      acc[t] = _mm_fmadd_ps(f23, scale, acc[t]);
      acc[t] = _mm_fmadd_ps(_mm_movehl_ps(f23, f23), scale, acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    out[t * out_stride] = _mm_cvtss_f32(_mm_sub_ss(acc[t], _mm_movehdup_ps(acc[t])));
  }
}

template <int T>
void q6_k_tile(const uint8_t* w_row, const uint8_t* const* x, int64_t nb, float* out,
               int64_t out_stride, int64_t row_bytes) {
  __m256 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
  const auto* wb = reinterpret_cast<const BlockQ6_K*>(w_row);
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i two = _mm256_set1_epi8(3);
  for (int64_t b = 0; b < nb; ++b) {
    const BlockQ6_K& blk = wb[b];
    prefetch_next_row(&blk, row_bytes);
    __m256i q[8];  // chunk c = elements 32c..32c+31, unsigned 0..63
#pragma GCC unroll 8
    for (int h = 0; h < 2; ++h) {
      const __m256i ql0 = load256(blk.ql + 64 * h);
      const __m256i ql1 = load256(blk.ql + 64 * h + 32);
      const __m256i qh = load256(blk.qh + 32 * h);
      q[4 * h + 0] = _mm256_or_si256(_mm256_and_si256(ql0, low4),
                                     _mm256_slli_epi16(_mm256_and_si256(qh, two), 4));
      q[4 * h + 1] =
          _mm256_or_si256(_mm256_and_si256(ql1, low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), two), 4));
      q[4 * h + 2] =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), two), 4));
      q[4 * h + 3] =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), two), 4));
    }
    const __m256i sc16 =
        _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales)));
    const float d = half_to_float(blk.d);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const BlockQ8_K& xb = reinterpret_cast<const BlockQ8_K*>(x[t])[b];
      // -32 * sum_g sc_g * bsum_g, folded into the integer accumulator.
      __m256i isum = _mm256_slli_epi32(_mm256_madd_epi16(sc16, load256(xb.bsums)), 5);
      isum = _mm256_sub_epi32(_mm256_setzero_si256(), isum);
#pragma GCC unroll 8
      for (int c = 0; c < 8; ++c) {
        const __m256i p16 = _mm256_maddubs_epi16(q[c], load256(xb.qs + 32 * c));
        const __m256i scv = _mm256_set_m128i(_mm_set1_epi16(blk.scales[2 * c + 1]),
                                             _mm_set1_epi16(blk.scales[2 * c]));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p16, scv));
      }
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_set1_ps(d * xb.d), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) out[t * out_stride] = hsum(acc[t]);
}

template <int T, class Fn>
void k_tokens(int toks, const uint8_t* w_row, const uint8_t* const* xr, float* out, int64_t stride,
              Fn&& fn) {
  int t = 0;
  for (; t + T <= toks; t += T)
    fn(std::integral_constant<int, T>{}, w_row, xr + t, out + t * stride);
  for (; t < toks; ++t) fn(std::integral_constant<int, 1>{}, w_row, xr + t, out + t * stride);
}

void matmul_q4_k(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / kQK_K;
  const auto row_bytes = static_cast<int64_t>(w.row_bytes);
  drive<1, 4>(w, x_enc, x_row_bytes, n, y, r0, r1,
              [&](int, int toks, const uint8_t* const* wr, const uint8_t* const* xr, float* out) {
                k_tokens<4>(toks, wr[0], xr, out, w.rows,
                            [&](auto tc, const uint8_t* wrow, const uint8_t* const* xx, float* o) {
                              q4_k_tile<decltype(tc)::value>(wrow, xx, nb, o, w.rows, row_bytes);
                            });
              });
}

void matmul_q6_k(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / kQK_K;
  const auto row_bytes = static_cast<int64_t>(w.row_bytes);
  drive<1, 4>(w, x_enc, x_row_bytes, n, y, r0, r1,
              [&](int, int toks, const uint8_t* const* wr, const uint8_t* const* xr, float* out) {
                k_tokens<4>(toks, wr[0], xr, out, w.rows,
                            [&](auto tc, const uint8_t* wrow, const uint8_t* const* xx, float* o) {
                              q6_k_tile<decltype(tc)::value>(wrow, xx, nb, o, w.rows, row_bytes);
                            });
              });
}

}  // namespace

void encode_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* in = x + b * kQK_K;
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < kQK_K; i += 8) {
      m = _mm256_max_ps(m, _mm256_and_ps(_mm256_loadu_ps(in + i), abs_mask));
    }
    const float amax = hmax_abs(m);
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = 127.0f / amax;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i max_q = _mm256_set1_epi32(127);
    for (int i = 0; i < kQK_K; i += 32) {
      __m256i q[4];
#pragma GCC unroll 8
      for (int j = 0; j < 4; ++j) {
        const __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(in + i + 8 * j), vs),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        q[j] = _mm256_min_epi32(_mm256_cvtps_epi32(r), max_q);
      }
      const __m256i packed = pack_i32_to_i8(q[0], q[1], q[2], q[3]);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs + i), packed);
      // Two 16-element group sums.
      const __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), packed);
      const __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
      alignas(32) int32_t part[8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(part), s32);
      y[b].bsums[i / 16] = static_cast<int16_t>(part[0] + part[1] + part[2] + part[3]);
      y[b].bsums[i / 16 + 1] = static_cast<int16_t>(part[4] + part[5] + part[6] + part[7]);
      y[b].bsums32[i / 32] = static_cast<int16_t>(y[b].bsums[i / 16] + y[b].bsums[i / 16 + 1]);
    }
    y[b].d = 1.0f / iscale;
  }
}

void matmul_kquant_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                        float* y, int64_t row_begin, int64_t row_end) {
  switch (w.type) {
    case DType::kQ4_K:
      matmul_q4_k(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    case DType::kQ6_K:
      matmul_q6_k(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    default:
      return;
  }
}

}  // namespace strata::avx2
