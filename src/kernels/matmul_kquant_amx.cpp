// AMX int8 matmul for Q4_K and Q6_K weights (GGUF layout) against Q8_K
// activations.
//
// Weights: each 16-row tile is staged and packed with the VNNI kernel's own
// code (kquant_packed_avx512.h) once per call and row tile, then used by
// every token tile. Packed, row j's four quants of group i sit in dword
// lane j of q[i], which is exactly a row of the tile unit's B operand. The
// repack happens per call rather than at load because the VNNI kernel,
// which serves decode (n < 16), reads the GGUF layout, and one copy of the
// weights is all the memory there is; its cost is shared by n / 16 token
// tiles (a few percent at n = 512).
//
// Activations: the A tiles are loaded straight from the Q8_K rows (row
// stride = the activation row's bytes): laying them out in tile order
// first cost a fixed ~0.5 ms per call at n = 512, which the 512-row
// calibration saw as a tie.
//
// Q4_K, tile shape K = 32: one TDPBSSD per 32-element sub-block gives the
// exact dot_s = sum(q x) for 16 tokens x 16 rows. The VNNI kernel's
// arithmetic is then repeated per pair c of sub-blocks: the integer
// S_c = sc_2c dot_2c + sc_2c+1 dot_2c+1 is formed in fp32, exactly
// (|dot| < 2^16, sc < 64: each product < 2^22, their sum < 2^23), and
// acc = fma(S_c, d_w d_x, acc); the mins M_c come from the activation
// block sums with vpdpwssd as in the VNNI kernel, acc_min = fma(M_c,
// dmin_w d_x, acc_min); in (block, c) order; the output is acc - acc_min.
//
// Q6_K, tile shape K = 64: the scales are folded into the weights. Per
// element, p = (q - 32) sc is an exact int16 in [-4064, 4096], split as
// p = 128 hi + lo with lo in [0, 127] (unsigned B) and hi in [-32, 32]
// (signed B). Two tile chains, TDPBSUD over lo and TDPBSSD over hi, each
// accumulating a super-block's four 64-element chunks in the tile, give
// 128 C_hi + C_lo = sum_s sc_s dot_s(q - 32, x): the VNNI kernel's exact
// integer per super-block. Then, as it does, sum = sum + (d_w d_x) isum
// with a separately rounded multiply and add, in block order.
//
// Results of block b are scaled while the tile unit computes block b + 1
// (tilestored does not forward to loads: its data has to reach L1 first).
#include "kernels/matmul_kquant_amx.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "kernels/amx_intrinsics.h"
#include "kernels/amx_tile_product.h"
#include "kernels/kquant_packed_avx512.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_kquant_avx512.h"
#include "kernels/quant.h"

// GCC 12 reports the deliberately undefined upper lanes inside AVX-512
// intrinsics as uninitialized (as in matmul_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace strata::amx {
namespace {

using avx512_kquant::PackedQ4K;
using avx512_kquant::PackedQ6K;
using avx512_kquant::RowTile;

constexpr int kTileTokens = 16;
constexpr int kTileRows = avx512_kquant::kRowTile;
constexpr int kCInts = kTileTokens * kTileRows;  // one C tile's int32 results
static_assert(kCInts == 16 * 16, "dpbssd_and_store (amx_tile_product.h) stores 16 x 16 C tiles");
constexpr long kCStride = kTileRows * sizeof(int32_t);
constexpr size_t kBRowBytes = 64;  // 16 weight rows x 4 bytes
constexpr size_t kXQs = offsetof(BlockQ8_K, qs);
constexpr size_t kXBsums32 = offsetof(BlockQ8_K, bsums32);
constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

// Q4_K: eight 32-element sub-blocks per super-block, one K = 32 tile each.
constexpr int kQ4KSubs = kQK_K / 32;
// Q6_K: four 64-element chunks per super-block, one K = 64 tile each.
constexpr int kQ6KChunks = kQK_K / 64;

// Compiler barrier: GCC's tile intrinsics are asm statements that declare
// no memory input, so the stores that fill their operands must be fenced.
inline void memory_barrier() {
  asm volatile("" ::: "memory");
}

inline __m512i bcast32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return _mm512_set1_epi32(v);
}

// ---------------------------------------------------------------------------
// Q4_K

struct Q4KArgs {
  const PackedQ4K* w[2];  // the row tiles' packed super-blocks
  const uint8_t* x;       // the step's token m: its Q8_K row at x + m * x_row_bytes
  size_t x_row_bytes;
  int64_t nb;
};

inline float block_scale(const uint8_t* x, size_t x_row_bytes, int m, int64_t b) {
  return reinterpret_cast<const BlockQ8_K*>(x + static_cast<size_t>(m) * x_row_bytes)[b].d;
}

// C[2 tt + h] = A[tt] x B[h] for sub-block i (super-block i / 8), stored to c.
template <int TT, int WT>
[[gnu::always_inline]] inline void q4_k_issue(const Q4KArgs& a, int64_t i, int32_t* c) {
  const int64_t b = i / kQ4KSubs, s = i % kQ4KSubs;
  const uint8_t* xa = a.x + static_cast<size_t>(b) * sizeof(BlockQ8_K) + kXQs + 32 * s;
  const auto stride = static_cast<long>(a.x_row_bytes);
  _tile_loadd(4, xa, stride);
  if constexpr (TT == 2) _tile_loadd(5, xa + kTileTokens * a.x_row_bytes, stride);
  _tile_loadd(6, &a.w[0][b].q[8 * s], kBRowBytes);
  if constexpr (WT == 2) _tile_loadd(7, &a.w[1][b].q[8 * s], kBRowBytes);
  dpbssd_and_store<TT, WT>(c);
}

// The running fp32 sums of one step, 32 tokens x 2 row tiles.
struct Q4KSums {
  __m512 acc[2 * kTileTokens][2];
  __m512 acc_min[2 * kTileTokens][2];
  __m512 even[2 * kTileTokens][2];   // sc_2c dot_2c, until dot_2c+1 comes
  __m512 scale[2 * kTileTokens][2];  // d_w d_x of the current super-block
};

// Sub-block i's results in c into the sums (at a super-block's first
// sub-block also its scales and mins), the VNNI kernel's arithmetic.
template <int TT, int WT>
[[gnu::always_inline]] inline void q4_k_post(const Q4KArgs& a, int64_t i, const int32_t* c,
                                             Q4KSums& z) {
  const int64_t b = i / kQ4KSubs, s = i % kQ4KSubs;
  if (s == 0) {
    const __m512i zero = _mm512_setzero_si512();
    for (int m = 0; m < TT * kTileTokens; ++m) {
      const __m512 dx = _mm512_set1_ps(block_scale(a.x, a.x_row_bytes, m, b));
      const uint8_t* bs = a.x + static_cast<size_t>(m) * a.x_row_bytes +
                          static_cast<size_t>(b) * sizeof(BlockQ8_K) + kXBsums32;
#pragma GCC unroll 2
      for (int h = 0; h < WT; ++h) {
        const PackedQ4K& p = a.w[h][b];
        z.scale[m][h] = _mm512_mul_ps(p.d, dx);
        const __m512 smin = _mm512_mul_ps(p.dmin, dx);
#pragma GCC unroll 4
        for (int cc = 0; cc < 4; ++cc) {
          const __m512i mi = _mm512_dpwssd_epi32(zero, p.mm[cc], bcast32(bs + 4 * cc));
          z.acc_min[m][h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(mi), smin, z.acc_min[m][h]);
        }
      }
    }
  }
  __m512 sc[WT];
#pragma GCC unroll 2
  for (int h = 0; h < WT; ++h) sc[h] = _mm512_cvtepi32_ps(a.w[h][b].sc[s]);
  const bool first_of_pair = (s % 2) == 0;
#pragma GCC unroll 2
  for (int tt = 0; tt < TT; ++tt) {
#pragma GCC unroll 4
    for (int mm = 0; mm < kTileTokens; ++mm) {
      const int m = tt * kTileTokens + mm;
#pragma GCC unroll 2
      for (int h = 0; h < WT; ++h) {
        const __m512 dot =
            _mm512_cvtepi32_ps(_mm512_load_si512(c + (2 * tt + h) * kCInts + mm * kTileRows));
        if (first_of_pair) {
          z.even[m][h] = _mm512_mul_ps(dot, sc[h]);
        } else {
          const __m512 pair = _mm512_fmadd_ps(dot, sc[h], z.even[m][h]);  // exact
          z.acc[m][h] = _mm512_fmadd_ps(pair, z.scale[m][h], z.acc[m][h]);
        }
      }
    }
  }
}

template <int TT, int WT>
__attribute__((noinline)) void q4_k_step(const Q4KArgs& a, float* out, int64_t out_stride,
                                         const __mmask16* mask) {
  alignas(64) Q4KSums z;
  for (int m = 0; m < TT * kTileTokens; ++m) {
    for (int h = 0; h < WT; ++h) z.acc[m][h] = z.acc_min[m][h] = _mm512_setzero_ps();
  }
  alignas(64) int32_t c[2][4 * kCInts];
  const int64_t subs = a.nb * kQ4KSubs;
  q4_k_issue<TT, WT>(a, 0, c[0]);
  for (int64_t i = 0; i < subs; ++i) {
    if (i + 1 < subs) q4_k_issue<TT, WT>(a, i + 1, c[(i + 1) & 1]);
    q4_k_post<TT, WT>(a, i, c[i & 1], z);
  }
  for (int m = 0; m < TT * kTileTokens; ++m) {
    for (int h = 0; h < WT; ++h) {
      _mm512_mask_storeu_ps(out + m * out_stride + h * kTileRows, mask[h],
                            _mm512_sub_ps(z.acc[m][h], z.acc_min[m][h]));
    }
  }
}

void q4_k_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n_amx,
               float* y, int64_t r0, int64_t r1) {
  use_tile_shape(TileShape::kK32);
  const int64_t nb = w.cols / kQK_K;
  thread_local std::vector<uint8_t> stage;
  thread_local std::vector<PackedQ4K> packed;
  if (packed.size() < static_cast<size_t>(2 * nb)) packed.resize(2 * nb);
  Q4KArgs a{};
  a.nb = nb;
  a.x_row_bytes = x_row_bytes;
  for (int64_t r = r0; r < r1; r += 2 * kTileRows) {
    const int wt = r1 - r > kTileRows ? 2 : 1;
    __mmask16 mask[2] = {0, 0};
    for (int h = 0; h < wt; ++h) {
      const int64_t rh = r + h * kTileRows;
      const RowTile rt = avx512_kquant::stage_row_tile(w, rh, r1, &stage);
      for (int64_t b = 0; b < nb; ++b) avx512_kquant::pack_q4_k(rt, b, &packed[h * nb + b]);
      a.w[h] = packed.data() + h * nb;
      mask[h] = static_cast<__mmask16>((1u << rt.num_rows) - 1u);
    }
    memory_barrier();
    for (int64_t t = 0; t < n_amx; t += 2 * kTileTokens) {
      const int tt = n_amx - t > kTileTokens ? 2 : 1;
      a.x = x_enc + static_cast<size_t>(t) * x_row_bytes;
      float* out = y + t * w.rows + r;
      with_tile_counts(tt, wt, [&]<int TT, int WT>() { q4_k_step<TT, WT>(a, out, w.rows, mask); });
    }
  }
}

// ---------------------------------------------------------------------------
// Q6_K

// One super-block of a 16-row tile as the tile unit's B operands: chunk k
// (64 elements) is rows lo[16k..16k+15] (and hi[...]) of 64 bytes, row r
// holding the 16 weight rows' group 16k + r.
struct alignas(64) Q6KTiles {
  __m512i lo[avx512_kquant::kGroups];  // p & 127, unsigned
  __m512i hi[avx512_kquant::kGroups];  // p >> 7 (floor), signed
  __m512 d;
};

// p = (q - 32) sc per quant from the VNNI kernel's packed super-block.
void split_q6_k(const PackedQ6K& p, Q6KTiles* t) {
  const __m512i k32 = _mm512_set1_epi8(32);
  const __m512i low7 = _mm512_set1_epi16(0x7F);
  const __m512i low8 = _mm512_set1_epi16(0xFF);
  const __m512i low16 = _mm512_set1_epi32(0xFFFF);
#pragma GCC unroll 4
  for (int i = 0; i < avx512_kquant::kGroups; ++i) {
    const __m512i sc = p.sc[i / 4];  // int32 per lane, in [-128, 127]
    const __m512i sc16 = _mm512_or_si512(_mm512_and_si512(sc, low16), _mm512_slli_epi32(sc, 16));
    const __m512i q = _mm512_sub_epi8(p.q[i], k32);
    const __m512i q_even = _mm512_srai_epi16(_mm512_slli_epi16(q, 8), 8);  // bytes 0 and 2
    const __m512i q_odd = _mm512_srai_epi16(q, 8);                         // bytes 1 and 3
    const __m512i p_even = _mm512_mullo_epi16(q_even, sc16);               // exact: |p| <= 4096
    const __m512i p_odd = _mm512_mullo_epi16(q_odd, sc16);
    t->lo[i] = _mm512_or_si512(_mm512_and_si512(p_even, low7),
                               _mm512_slli_epi16(_mm512_and_si512(p_odd, low7), 8));
    t->hi[i] = _mm512_or_si512(_mm512_and_si512(_mm512_srai_epi16(p_even, 7), low8),
                               _mm512_slli_epi16(_mm512_srai_epi16(p_odd, 7), 8));
  }
  t->d = p.d;
}

struct Q6KArgs {
  const Q6KTiles* w;  // the row tile's super-blocks
  const uint8_t* x;   // the step's token m: its Q8_K row at x + m * x_row_bytes
  size_t x_row_bytes;
  int64_t nb;
};

// Super-block b for TT token tiles: C_lo(tt) in tmm 2 tt, C_hi(tt) in
// tmm 2 tt + 1, accumulated over the four chunks, stored to c.
template <int TT>
[[gnu::always_inline]] inline void q6_k_issue(const Q6KArgs& a, int64_t b, int32_t* c) {
  const Q6KTiles& w = a.w[b];
  const uint8_t* xb = a.x + static_cast<size_t>(b) * sizeof(BlockQ8_K) + kXQs;
  const auto stride = static_cast<long>(a.x_row_bytes);
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (TT == 2) {
    _tile_zero(2);
    _tile_zero(3);
  }
#pragma GCC unroll 4
  for (int k = 0; k < kQ6KChunks; ++k) {
    _tile_loadd(4, xb + 64 * k, stride);
    if constexpr (TT == 2) _tile_loadd(5, xb + 64 * k + kTileTokens * a.x_row_bytes, stride);
    _tile_loadd(6, &w.lo[16 * k], kBRowBytes);
    _tile_loadd(7, &w.hi[16 * k], kBRowBytes);
    _tile_dpbsud(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    if constexpr (TT == 2) {
      _tile_dpbsud(2, 5, 6);
      _tile_dpbssd(3, 5, 7);
    }
  }
  _tile_stored(0, c, kCStride);
  _tile_stored(1, c + kCInts, kCStride);
  if constexpr (TT == 2) {
    _tile_stored(2, c + 2 * kCInts, kCStride);
    _tile_stored(3, c + 3 * kCInts, kCStride);
  }
}

// sum = sum + (d_w d_x) isum, isum = 128 C_hi + C_lo: the VNNI kernel's
// separately rounded multiply and add.
template <int TT>
[[gnu::always_inline]] inline void q6_k_post(const Q6KArgs& a, int64_t b, const int32_t* c,
                                             __m512* acc) {
  const __m512 d = a.w[b].d;
#pragma GCC unroll 2
  for (int tt = 0; tt < TT; ++tt) {
#pragma GCC unroll 4
    for (int mm = 0; mm < kTileTokens; ++mm) {
      const int m = tt * kTileTokens + mm;
      const __m512i lo = _mm512_load_si512(c + (2 * tt) * kCInts + mm * kTileRows);
      const __m512i hi = _mm512_load_si512(c + (2 * tt + 1) * kCInts + mm * kTileRows);
      const __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(hi, 7), lo);
      const __m512 scale =
          _mm512_mul_round_ps(d, _mm512_set1_ps(block_scale(a.x, a.x_row_bytes, m, b)), kRound);
      acc[m] = _mm512_add_round_ps(
          acc[m], _mm512_mul_round_ps(scale, _mm512_cvtepi32_ps(isum), kRound), kRound);
    }
  }
}

template <int TT>
__attribute__((noinline)) void q6_k_step(const Q6KArgs& a, float* out, int64_t out_stride,
                                         __mmask16 mask) {
  alignas(64) __m512 acc[2 * kTileTokens];
  for (int m = 0; m < TT * kTileTokens; ++m) acc[m] = _mm512_setzero_ps();
  alignas(64) int32_t c[2][4 * kCInts];
  q6_k_issue<TT>(a, 0, c[0]);
  for (int64_t b = 0; b < a.nb; ++b) {
    if (b + 1 < a.nb) q6_k_issue<TT>(a, b + 1, c[(b + 1) & 1]);
    q6_k_post<TT>(a, b, c[b & 1], acc);
  }
  for (int m = 0; m < TT * kTileTokens; ++m) {
    _mm512_mask_storeu_ps(out + m * out_stride, mask, acc[m]);
  }
}

void q6_k_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n_amx,
               float* y, int64_t r0, int64_t r1) {
  use_tile_shape(TileShape::kK64);
  const int64_t nb = w.cols / kQK_K;
  thread_local std::vector<uint8_t> stage;
  thread_local std::vector<Q6KTiles> tiles;
  if (tiles.size() < static_cast<size_t>(nb)) tiles.resize(nb);
  alignas(64) PackedQ6K packed;
  Q6KArgs a{};
  a.nb = nb;
  a.x_row_bytes = x_row_bytes;
  a.w = tiles.data();
  for (int64_t r = r0; r < r1; r += kTileRows) {
    const RowTile rt = avx512_kquant::stage_row_tile(w, r, r1, &stage);
    for (int64_t b = 0; b < nb; ++b) {
      avx512_kquant::pack_q6_k(rt, b, &packed);
      split_q6_k(packed, &tiles[b]);
    }
    memory_barrier();
    const auto mask = static_cast<__mmask16>((1u << rt.num_rows) - 1u);
    for (int64_t t = 0; t < n_amx; t += 2 * kTileTokens) {
      a.x = x_enc + static_cast<size_t>(t) * x_row_bytes;
      float* out = y + t * w.rows + r;
      if (n_amx - t > kTileTokens) {
        q6_k_step<2>(a, out, w.rows, mask);
      } else {
        q6_k_step<1>(a, out, w.rows, mask);
      }
    }
  }
}

}  // namespace

bool kquant_matmul_supports(const WeightView& w) {
  return w.layout == WeightLayout::kGguf && (w.type == DType::kQ4_K || w.type == DType::kQ6_K);
}

void kquant_matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                        float* y, int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end || n <= 0) return;
  const int64_t n_amx = n / kTileTokens * kTileTokens;
  if (n_amx < n) {
    avx512_kquant::matmul_rows(w, x_enc + static_cast<size_t>(n_amx) * x_row_bytes, x_row_bytes,
                               n - n_amx, y + n_amx * w.rows, row_begin, row_end);
  }
  if (n_amx == 0) return;
  if (w.type == DType::kQ4_K) {
    q4_k_rows(w, x_enc, x_row_bytes, n_amx, y, row_begin, row_end);
  } else if (w.type == DType::kQ6_K) {
    q6_k_rows(w, x_enc, x_row_bytes, n_amx, y, row_begin, row_end);
  }
}

}  // namespace strata::amx
