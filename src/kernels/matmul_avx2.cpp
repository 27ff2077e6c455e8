// AVX2/FMA/F16C matmul: the backend's interface (activation encoding and the
// dispatch over weight types) and the Q8_0 / Q4_0 family. The F32/F16/BF16
// family is in matmul_float_avx2.cpp, Q4_K/Q6_K in matmul_kquant_avx2.cpp;
// the tiling they share in matmul_tiling_avx2.h.
//
// Integer dot products: Q8_0/Q4_0 weights use the sign trick
// (maddubs(|w|, sign(x, w)) then madd with ones).
#include "kernels/matmul_avx2.h"

#include <immintrin.h>

#include <cstring>

#include "kernels/fp16.h"
#include "kernels/matmul_float_avx2.h"
#include "kernels/matmul_kquant_avx2.h"
#include "kernels/matmul_tiling_avx2.h"
#include "kernels/quant.h"
#include "kernels/vec_dot.h"

namespace strata::avx2 {
namespace {

// ---------------------------------------------------------------------------
// Activation encoding (byte-identical to vec_dot::encode_activation_row for
// the quantized formats; F16/BF16 activations are kept as fp32 values rounded
// through f16/bf16, which gives the same products without reconverting).

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
    y[b].d = _cvtss_sh(amax / 127.0f, _MM_FROUND_TO_NEAREST_INT);
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
    case DType::kF16:
      encode_f16_activation_row(x, cols, static_cast<float*>(dst));
      return;
    case DType::kBF16:
      encode_bf16_activation_row(x, cols, static_cast<float*>(dst));
      return;
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

void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;
  switch (w.type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      matmul_float_rows(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    case DType::kQ8_0:
      matmul_q8<WeightQ8_0>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    case DType::kQ4_0:
      matmul_q8<WeightQ4_0>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    case DType::kQ4_K:
    case DType::kQ6_K:
      matmul_kquant_rows(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    default:
      return;
  }
}

}  // namespace strata::avx2
