// AVX-512 VNNI int8 GEMM for Q4_0 and Q8_0 weights (prefill and batched
// decode; n >= kMinTokens).
//
// A thread walks its weight rows in tiles of 16. Each tile is first expanded
// into a scratch of int8 values q - 8 (Q4_0's signed quants), transposed so
// that for block b and 4-element group k one 64-byte vector holds the group
// of all 16 rows (row j in dword lane j). The tile is then run against every
// token: vpdpbusd(broadcast(x group k), w group k) adds the group's four
// products into lane j for row j, so eight instructions give each row's
// exact block dot without any horizontal reduction.
//
// vpdpbusd multiplies unsigned by signed bytes, so activations are stored as
// x + 128 (XOR 0x80) and the weight tile carries, per row and block,
// corr = -128 * sum(q - 8): sum((x + 128)(q - 8)) + corr = sum(x (q - 8)),
// exactly, in int32.
//
// Q8_0 uses the same layout with its quants as they are; its correction is
// kept per 4-element group, because the AVX2 kernel it must round like
// accumulates each group in its own fp32 lane (see PackedBlockQ8).
#include "kernels/matmul_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/matmul_avx2.h"
#include "kernels/quant.h"
#include "util/thread_pool.h"

namespace strata::avx512 {
namespace {

constexpr int kRowTile = 16;         // rows per tile: one int32 lane each
constexpr int kGroups = kQK4_0 / 4;  // 4-byte groups per block
// Below this many tokens the tile expansion costs more than it saves.
constexpr int64_t kMinTokens = 16;
// Tokens per register tile: T int32 + T fp32 accumulators in zmm registers.
constexpr int kTokenTile = 8;
// Q8_0 keeps eight fp32 accumulators per token (one per 4-element group).
constexpr int kTokenTileQ8 = 4;

// One block of a packed tile.
struct PackedBlock {
  int8_t q[kGroups][kRowTile][4];  // [group][row][4] values q - 8
  float d[kRowTile];               // weight scale per row
  int32_t corr[kRowTile];          // -128 * sum(q - 8) per row
};
static_assert(sizeof(PackedBlock) == 640);

// One block of a packed Q8_0 tile. The AVX2 kernel accumulates each 4-element
// group in its own fp32 lane (fma per block) and sums the eight lanes at the
// end; to round the same, the correction and the accumulators are per group.
struct PackedBlockQ8 {
  int8_t q[kGroups][kRowTile][4];   // [group][row][4] quants
  int32_t corr[kGroups][kRowTile];  // -128 * sum of the group's quants
  float d[kRowTile];
};
static_assert(sizeof(PackedBlockQ8) == 1088);

// A thread-local, 64-byte aligned array of nb packed blocks, reused across
// calls (no allocation after warm-up).
template <class Packed>
Packed* tile_scratch(int64_t nb) {
  thread_local std::vector<uint8_t> raw;
  const size_t bytes = static_cast<size_t>(nb) * sizeof(Packed) + 64;
  if (raw.size() < bytes) raw.resize(bytes);
  const auto addr = reinterpret_cast<uintptr_t>(raw.data());
  return reinterpret_cast<Packed*>(raw.data() + ((64 - addr % 64) % 64));
}

// Expands rows [r0, r0 + rows) of a Q4_0 weight (rows <= 16) into nb packed
// blocks; missing rows are zero (their outputs are never stored).
void pack_q4_0_tile(const WeightView& w, int64_t r0, int rows, int64_t nb, PackedBlock* out) {
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const __m128i low4 = _mm_set1_epi8(0x0F);
  const __m128i eight = _mm_set1_epi8(8);
  for (int64_t b = 0; b < nb; ++b) {
    PackedBlock& pb = out[b];
    for (int j = 0; j < kRowTile; ++j) {
      if (j >= rows) {
        for (int k = 0; k < kGroups; ++k) std::memset(pb.q[k][j], 0, 4);
        pb.d[j] = 0.0f;
        pb.corr[j] = 0;
        continue;
      }
      const BlockQ4_0& blk =
          reinterpret_cast<const BlockQ4_0*>(wd + static_cast<size_t>(r0 + j) * w.row_bytes)[b];
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.qs));
      const __m128i lo = _mm_and_si128(raw, low4);
      const __m128i hi = _mm_and_si128(_mm_srli_epi16(raw, 4), low4);
      const __m128i sad = _mm_add_epi64(_mm_sad_epu8(lo, _mm_setzero_si128()),
                                        _mm_sad_epu8(hi, _mm_setzero_si128()));
      const int sum_q = _mm_cvtsi128_si32(sad) + _mm_extract_epi32(sad, 2);
      alignas(16) int8_t e[kQK4_0];  // elements 0..31 in order, minus 8
      _mm_store_si128(reinterpret_cast<__m128i*>(e), _mm_sub_epi8(lo, eight));
      _mm_store_si128(reinterpret_cast<__m128i*>(e + 16), _mm_sub_epi8(hi, eight));
      for (int k = 0; k < kGroups; ++k) std::memcpy(pb.q[k][j], e + 4 * k, 4);
      pb.d[j] = _cvtsh_ss(blk.d);
      pb.corr[j] = -128 * (sum_q - 8 * kQK4_0);
    }
  }
}

inline __m512i broadcast_group(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// out[t * out_stride + j] for j where mask bit j is set, t in [0, T).
template <int T>
void q4_0_tile(const PackedBlock* packed, int64_t nb, const uint8_t* const* x, float* out,
               int64_t out_stride, __mmask16 mask) {
  __m512 facc[T];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) facc[t] = _mm512_setzero_ps();
  const BlockQ8_0* xb[T];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) xb[t] = reinterpret_cast<const BlockQ8_0*>(x[t]);
  for (int64_t b = 0; b < nb; ++b) {
    const PackedBlock& pb = packed[b];
    const __m512i corr = _mm512_load_si512(pb.corr);
    __m512i iacc[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) iacc[t] = corr;
#pragma GCC unroll 8
    for (int k = 0; k < kGroups; ++k) {
      const __m512i wk = _mm512_load_si512(pb.q[k]);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        iacc[t] = _mm512_dpbusd_epi32(iacc[t], broadcast_group(xb[t][b].qs + 4 * k), wk);
      }
    }
    const __m512 dw = _mm512_load_ps(pb.d);
    // maskz_cvt: the unmasked form trips a GCC 12 -Wmaybe-uninitialized false positive.
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(_cvtsh_ss(xb[t][b].d)));
      facc[t] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, iacc[t]), scale, facc[t]);
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, mask, facc[t]);
}

void pack_q8_0_tile(const WeightView& w, int64_t r0, int rows, int64_t nb, PackedBlockQ8* out) {
  const auto* wd = static_cast<const uint8_t*>(w.data);
  for (int64_t b = 0; b < nb; ++b) {
    PackedBlockQ8& pb = out[b];
    for (int j = 0; j < kRowTile; ++j) {
      if (j >= rows) {
        for (int k = 0; k < kGroups; ++k) {
          std::memset(pb.q[k][j], 0, 4);
          pb.corr[k][j] = 0;
        }
        pb.d[j] = 0.0f;
        continue;
      }
      const BlockQ8_0& blk =
          reinterpret_cast<const BlockQ8_0*>(wd + static_cast<size_t>(r0 + j) * w.row_bytes)[b];
      for (int k = 0; k < kGroups; ++k) {
        const int8_t* g = blk.qs + 4 * k;
        std::memcpy(pb.q[k][j], g, 4);
        pb.corr[k][j] = -128 * (g[0] + g[1] + g[2] + g[3]);
      }
      pb.d[j] = _cvtsh_ss(blk.d);
    }
  }
}

template <int T>
void q8_0_tile(const PackedBlockQ8* packed, int64_t nb, const uint8_t* const* x, float* out,
               int64_t out_stride, __mmask16 mask) {
  __m512 facc[T][kGroups];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int k = 0; k < kGroups; ++k) facc[t][k] = _mm512_setzero_ps();
  const BlockQ8_0* xb[T];
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) xb[t] = reinterpret_cast<const BlockQ8_0*>(x[t]);
  for (int64_t b = 0; b < nb; ++b) {
    const PackedBlockQ8& pb = packed[b];
    const __m512 dw = _mm512_load_ps(pb.d);
    __m512 scale[T];
#pragma GCC unroll 16
    for (int t = 0; t < T; ++t) scale[t] = _mm512_mul_ps(dw, _mm512_set1_ps(_cvtsh_ss(xb[t][b].d)));
#pragma GCC unroll 8
    for (int k = 0; k < kGroups; ++k) {
      const __m512i corr = _mm512_load_si512(pb.corr[k]);
      const __m512i wk = _mm512_load_si512(pb.q[k]);
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const __m512i isum = _mm512_dpbusd_epi32(corr, broadcast_group(xb[t][b].qs + 4 * k), wk);
        facc[t][k] = _mm512_fmadd_ps(_mm512_maskz_cvtepi32_ps(0xFFFF, isum), scale[t], facc[t][k]);
      }
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    // The AVX2 kernel's horizontal sum: ((g0+g4) + (g2+g6)) + ((g1+g5) + (g3+g7)).
    const __m512 s04 = _mm512_add_ps(facc[t][0], facc[t][4]);
    const __m512 s15 = _mm512_add_ps(facc[t][1], facc[t][5]);
    const __m512 s26 = _mm512_add_ps(facc[t][2], facc[t][6]);
    const __m512 s37 = _mm512_add_ps(facc[t][3], facc[t][7]);
    const __m512 sum = _mm512_add_ps(_mm512_add_ps(s04, s26), _mm512_add_ps(s15, s37));
    _mm512_mask_storeu_ps(out + t * out_stride, mask, sum);
  }
}

// Runs the Kernel<T> tile over toks (<= TMax) tokens.
template <class Packed, int T>
void run_tokens(const Packed* packed, int64_t nb, const uint8_t* const* x, float* out,
                int64_t out_stride, __mmask16 mask, int toks) {
  if (toks == T) {
    if constexpr (std::is_same_v<Packed, PackedBlock>) {
      q4_0_tile<T>(packed, nb, x, out, out_stride, mask);
    } else {
      q8_0_tile<T>(packed, nb, x, out, out_stride, mask);
    }
  } else if constexpr (T > 1) {
    run_tokens<Packed, T - 1>(packed, nb, x, out, out_stride, mask, toks);
  }
}

// Packs each 16-row tile of [r0, r1) once, then runs it over all n tokens.
template <class Packed, int TMax, class PackFn>
void matmul_packed(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                   float* y, int64_t r0, int64_t r1, PackFn pack) {
  const int64_t nb = w.cols / kQK8_0;
  Packed* packed = tile_scratch<Packed>(nb);
  for (int64_t r = r0; r < r1; r += kRowTile) {
    const int rows = static_cast<int>(std::min<int64_t>(kRowTile, r1 - r));
    pack(w, r, rows, nb, packed);
    const auto mask = static_cast<__mmask16>((1u << rows) - 1u);
    for (int64_t t = 0; t < n; t += TMax) {
      const int toks = static_cast<int>(std::min<int64_t>(TMax, n - t));
      const uint8_t* xr[TMax];
      for (int i = 0; i < toks; ++i) xr[i] = x_enc + static_cast<size_t>(t + i) * x_row_bytes;
      run_tokens<Packed, TMax>(packed, nb, xr, y + t * w.rows + r, w.rows, mask, toks);
    }
  }
}

}  // namespace

bool matmul_supports(DType weight_type, int64_t n) {
  return (weight_type == DType::kQ4_0 || weight_type == DType::kQ8_0) && n >= kMinTokens;
}

size_t activation_row_bytes(DType weight_type, int64_t cols) {
  return avx2::activation_row_bytes(weight_type, cols);
}

void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst) {
  avx2::encode_activation_row(weight_type, x, cols, dst);
  auto* blocks = static_cast<BlockQ8_0*>(dst);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < cols / kQK8_0; ++b) {
    auto* q = reinterpret_cast<__m256i*>(blocks[b].qs);
    _mm256_storeu_si256(q, _mm256_xor_si256(_mm256_loadu_si256(q), flip));
  }
}

void split_rows(int64_t rows, int ith, int nth, int64_t* begin, int64_t* end) {
  const int64_t tiles = (rows + kRowTile - 1) / kRowTile;
  int64_t tb, te;
  split_range(tiles, ith, nth, &tb, &te);
  *begin = std::min(rows, tb * kRowTile);
  *end = std::min(rows, te * kRowTile);
}

void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;
  if (w.type == DType::kQ4_0) {
    matmul_packed<PackedBlock, kTokenTile>(w, x_enc, x_row_bytes, n, y, row_begin, row_end,
                                           pack_q4_0_tile);
  } else if (w.type == DType::kQ8_0) {
    matmul_packed<PackedBlockQ8, kTokenTileQ8>(w, x_enc, x_row_bytes, n, y, row_begin, row_end,
                                               pack_q8_0_tile);
  }
}

}  // namespace strata::avx512
