// AVX2/FMA/F16C matmul. Threads own contiguous ranges of weight rows; inside
// a range, tokens are processed in chunks (so a chunk's activations stay in
// L2) and each chunk in register tiles of R weight rows x T tokens, so every
// weight block loaded is used T times and every activation block R times.
//
// Integer dot products: Q8_0/Q4_0 weights use the sign trick
// (maddubs(|w|, sign(x, w)) then madd with ones); Q4_K/Q6_K weights are
// unsigned after unpacking, so maddubs(q, x) works directly and the offsets
// (Q4_K mins, Q6_K's -32) come from the Q8_K block sums.
#include "kernels/matmul_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant.h"
#include "kernels/vec_dot.h"

namespace strata::avx2 {
namespace {

constexpr int kRowTile = 4;  // rows per thread share are aligned to this
// Activation rows processed per pass over a thread's weight rows, so they
// stay in L2 (512 KiB on Zen3): 64 quantized rows of 2048 (~140 KiB), 16
// fp32 rows (128 KiB).
constexpr int64_t kTokenChunkQuant = 64;
constexpr int64_t kTokenChunkFloat = 16;

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax_abs(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float half_to_float(uint16_t h) {
  return _cvtsh_ss(h);
}

inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// ---------------------------------------------------------------------------
// Activation encoding (byte-identical to vec_dot::encode_activation_row for
// the quantized formats; F16/BF16 activations are kept as fp32 values rounded
// through f16/bf16, which gives the same products without reconverting).

// Packs 32 int32 lanes (4 vectors, each |v| <= 127) into 32 int8 in order.
inline __m256i pack_i32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i abcd = _mm256_packs_epi16(ab, cd);
  // packs interleaves 128-bit lanes: undo with a dword permutation.
  return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

void encode_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* in = x + b * kQK8_0;
    __m256 v[4];
    __m256 m = _mm256_setzero_ps();
#pragma GCC unroll 8
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(in + 8 * i);
      m = _mm256_max_ps(m, _mm256_and_ps(v[i], abs_mask));
    }
    const float amax = hmax_abs(m);
    y[b].d = fp32_to_fp16(amax / 127.0f);
    const __m256 vid = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i q[4];
#pragma GCC unroll 8
    for (int i = 0; i < 4; ++i) {
      q[i] = _mm256_cvtps_epi32(
          _mm256_round_ps(_mm256_mul_ps(v[i], vid), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs),
                        pack_i32_to_i8(q[0], q[1], q[2], q[3]));
  }
}

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
    }
    y[b].d = 1.0f / iscale;
  }
}

// ---------------------------------------------------------------------------
// Float weights (F32, F16, BF16) against fp32 activations.

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

// ---------------------------------------------------------------------------
// Q8_0 / Q4_0 weights against Q8_0 activations.

// kIsUnsigned: load() returns q + 8 in 0..15 (Q4_0's raw nibbles), so
// maddubs takes it directly and the offset is removed with the activation
// block's sum: sum((q - 8) x) = sum(q x) - 8 sum(x).
struct WeightQ8_0 {
  using Block = BlockQ8_0;
  static constexpr bool kIsUnsigned = false;
  static __m256i load(const Block& b) { return load256(b.qs); }
};
struct WeightQ4_0 {
  using Block = BlockQ4_0;
  static constexpr bool kIsUnsigned = true;
  static __m256i load(const Block& b) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m256i both = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
  }
};

// prefetch_bytes: distance from a weight block to the one to prefetch (the
// same block of the next row tile, so the whole next tile is in flight while
// this one computes).
template <class W, int R, int T>
void q8_tile(const uint8_t* const* w, const uint8_t* const* x, int64_t nb, float* out,
             int64_t out_stride, int64_t prefetch_bytes) {
  using Block = typename W::Block;
  __m256 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i wv[R], wa[R];
    float dw[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const Block& blk = reinterpret_cast<const Block*>(w[r])[b];
      _mm_prefetch(reinterpret_cast<const char*>(&blk) + prefetch_bytes, _MM_HINT_T0);
      wv[r] = W::load(blk);
      if constexpr (!W::kIsUnsigned) wa[r] = _mm256_sign_epi8(wv[r], wv[r]);
      dw[r] = half_to_float(blk.d);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0& xb = reinterpret_cast<const BlockQ8_0*>(x[t])[b];
      const __m256i xv = load256(xb.qs);
      const float dx = half_to_float(xb.d);
      __m256i offset_sum = _mm256_setzero_si256();  // 8 * sum(x), spread over 8 lanes
      if constexpr (W::kIsUnsigned) {
        offset_sum = _mm256_slli_epi32(
            _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), xv), ones), 3);
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        __m256i p32;
        if constexpr (W::kIsUnsigned) {
          p32 = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(wv[r], xv), ones),
                                 offset_sum);
        } else {
          p32 = _mm256_madd_epi16(_mm256_maddubs_epi16(wa[r], _mm256_sign_epi8(xv, wv[r])), ones);
        }
        acc[r][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p32), _mm256_set1_ps(dw[r] * dx), acc[r][t]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) out[t * out_stride + r] = hsum(acc[r][t]);
}

// Q4_0 against Q8_0 with each block's dot product summed exactly in integers
// before it is scaled and accumulated in fp32 (one fused multiply-add per
// block, in block order): the rounding of llama.cpp's repacked Q4_0 kernels.
// Pairs (r, t) are handled four at a time, their block sums gathered into
// one vector by a horizontal-add tree.
template <int R, int T>
void q4_0_tile(const uint8_t* const* w, const uint8_t* const* x, int64_t nb, float* out,
               int64_t out_stride, int64_t prefetch_bytes) {
  constexpr int kPairs = R * T;
  static_assert(kPairs == 1 || T == 4 || (R == 4 && T == 1), "pairs are reduced four at a time");
  constexpr int kGroups = (kPairs + 3) / 4;
  __m128 acc[kGroups];
#pragma GCC unroll 8
  for (int g = 0; g < kGroups; ++g) acc[g] = _mm_setzero_ps();
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    __m256i wv[R];
    float dw[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const BlockQ4_0& blk = reinterpret_cast<const BlockQ4_0*>(w[r])[b];
      _mm_prefetch(reinterpret_cast<const char*>(&blk) + prefetch_bytes, _MM_HINT_T0);
      wv[r] = WeightQ4_0::load(blk);
      dw[r] = half_to_float(blk.d);
    }
    __m256i p32[kPairs];
    float dx[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const BlockQ8_0& xb = reinterpret_cast<const BlockQ8_0*>(x[t])[b];
      const __m256i xv = load256(xb.qs);
      dx[t] = half_to_float(xb.d);
      // 8 * sum(x) spread over the lanes: removes the +8 of the raw nibbles.
      const __m256i offset_sum = _mm256_slli_epi32(
          _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), xv), ones), 3);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        p32[r * T + t] =
            _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(wv[r], xv), ones), offset_sum);
      }
    }
    if constexpr (kPairs == 1) {
      const __m128i h =
          _mm_add_epi32(_mm256_castsi256_si128(p32[0]), _mm256_extracti128_si256(p32[0], 1));
      const __m128i h2 = _mm_hadd_epi32(h, h);
      const __m128i sum = _mm_hadd_epi32(h2, h2);
      acc[0] = _mm_fmadd_ss(_mm_cvtepi32_ps(sum), _mm_set_ss(dw[0] * dx[0]), acc[0]);
    } else {
      // Group g holds pairs 4g..4g+3: (row g, tokens 0..3) when T == 4,
      // otherwise (rows 0..3, token 0). Scales dw * dx in fp32, per pair.
      __m128 dx4 = _mm_setzero_ps(), dw4 = _mm_setzero_ps();
      if constexpr (T == 4) {
        dx4 = _mm_setr_ps(dx[0], dx[1], dx[2], dx[3]);
      } else {
        dw4 = _mm_setr_ps(dw[0], dw[1], dw[2], dw[3]);
      }
#pragma GCC unroll 8
      for (int g = 0; g < kGroups; ++g) {
        const __m256i* v = p32 + 4 * g;
        const __m256i h =
            _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
        const __m128i sums =
            _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
        const __m128 scale =
            T == 4 ? _mm_mul_ps(_mm_set1_ps(dw[g]), dx4) : _mm_mul_ps(dw4, _mm_set1_ps(dx[0]));
        acc[g] = _mm_fmadd_ps(_mm_cvtepi32_ps(sums), scale, acc[g]);
      }
    }
  }
  alignas(16) float result[4 * kGroups];
#pragma GCC unroll 8
  for (int g = 0; g < kGroups; ++g) _mm_store_ps(result + 4 * g, acc[g]);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) out[t * out_stride + r] = result[r * T + t];
}

// ---------------------------------------------------------------------------
// Q4_K / Q6_K weights (one row) against T Q8_K activation rows.

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

// ---------------------------------------------------------------------------
// Tiling driver.

// Calls Tile<R, T>(w_rows, x_rows, ...) over rows [r0, r1) x tokens [0, n).
template <int RMax, int TMax, class TileFn>
void drive(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
           int64_t r0, int64_t r1, TileFn tile) {
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const int64_t chunk = x_row_bytes >= static_cast<size_t>(w.cols) * sizeof(float)
                            ? kTokenChunkFloat
                            : kTokenChunkQuant;
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t t1 = std::min(n, t0 + chunk);
    for (int64_t r = r0; r < r1; r += RMax) {
      const int rows = static_cast<int>(std::min<int64_t>(RMax, r1 - r));
      const uint8_t* w_rows[RMax];
#pragma GCC unroll 8
      for (int i = 0; i < rows; ++i) w_rows[i] = wd + static_cast<size_t>(r + i) * w.row_bytes;
      for (int64_t t = t0; t < t1; t += TMax) {
        const int toks = static_cast<int>(std::min<int64_t>(TMax, t1 - t));
        const uint8_t* x_rows[TMax];
#pragma GCC unroll 8
        for (int i = 0; i < toks; ++i) x_rows[i] = x_enc + static_cast<size_t>(t + i) * x_row_bytes;
        tile(rows, toks, w_rows, x_rows, y + t * w.rows + r);
      }
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

template <class W>
void matmul_q8(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
               int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / kQK8_0;
  const auto row_bytes = static_cast<int64_t>(w.row_bytes);
  auto run = [&](auto r_const, auto t_const) {
    constexpr int R = decltype(r_const)::value, T = decltype(t_const)::value;
    drive<R, T>(
        w, x_enc, x_row_bytes, n, y, r0, r1,
        [&](int rows, int toks, const uint8_t* const* wr, const uint8_t* const* xr, float* out) {
          constexpr bool is_q4_0 = W::kIsUnsigned;
          if (rows == R && toks == T) {
            if constexpr (is_q4_0) {
              q4_0_tile<R, T>(wr, xr, nb, out, w.rows, R * row_bytes);
            } else {
              q8_tile<W, R, T>(wr, xr, nb, out, w.rows, R * row_bytes);
            }
            return;
          }
#pragma GCC unroll 8
          for (int i = 0; i < rows; ++i) {
#pragma GCC unroll 8
            for (int t = 0; t < toks; ++t) {
              if constexpr (is_q4_0) {
                q4_0_tile<1, 1>(wr + i, xr + t, nb, out + t * w.rows + i, w.rows, row_bytes);
              } else {
                q8_tile<W, 1, 1>(wr + i, xr + t, nb, out + t * w.rows + i, w.rows, row_bytes);
              }
            }
          }
        });
  };
  if (n >= 4) {
    run(std::integral_constant<int, 2>{}, std::integral_constant<int, 4>{});
  } else {
    run(std::integral_constant<int, 4>{}, std::integral_constant<int, 1>{});
  }
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

bool matmul_supports(DType weight_type) {
  switch (weight_type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_K:
    case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

size_t activation_row_bytes(DType weight_type, int64_t cols) {
  switch (weight_type) {
    case DType::kF16:
    case DType::kBF16:
      return static_cast<size_t>(cols) * sizeof(float);
    default:
      return vec_dot::activation_row_bytes(weight_type, cols);
  }
}

void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst) {
  switch (weight_type) {
    case DType::kF16: {
      auto* out = static_cast<float*>(dst);
      int64_t i = 0;
      for (; i + 8 <= cols; i += 8) {
        const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
      }
      for (; i < cols; ++i) out[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
      return;
    }
    case DType::kBF16: {
      auto* out = static_cast<float*>(dst);
      for (int64_t i = 0; i < cols; ++i) out[i] = bf16_to_fp32(fp32_to_bf16(x[i]));
      return;
    }
    case DType::kQ8_0:
    case DType::kQ4_0:
      encode_q8_0(x, static_cast<BlockQ8_0*>(dst), cols);
      return;
    case DType::kQ4_K:
    case DType::kQ6_K:
      encode_q8_k(x, static_cast<BlockQ8_K*>(dst), cols);
      return;
    default:
      std::memcpy(dst, x, static_cast<size_t>(cols) * sizeof(float));
  }
}

void split_rows(int64_t rows, int ith, int nth, int64_t* begin, int64_t* end) {
  split_range_in_tiles(rows, kRowTile, ith, nth, begin, end);
}

void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;
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
    case DType::kQ8_0:
      matmul_q8<WeightQ8_0>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    case DType::kQ4_0:
      matmul_q8<WeightQ4_0>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
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
