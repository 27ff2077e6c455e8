// AVX-512 VNNI matmul for Q4_K and Q6_K weights against Q8_K activations.
//
// Layout of a packed super-block (16 rows, lanes = rows; the structs are in
// kquant_packed_avx512.h, shared with the AMX kernel): q[i] holds, in
// dword lane j, row j's four quants of elements 4i..4i+3 as unsigned bytes
// (Q4_K nibbles 0..15, Q6_K values 0..63, i.e. q + 32), so group i meets the
// activation dword x.qs[4i..4i+3] and
//   vpdpbusd(acc, q[i], broadcast(x dword i))
// adds row j's four products into lane j. A sub-block's groups are summed
// exactly in int32 and scaled per lane with vpmulld (the sums exceed int16,
// so vpdpwssd cannot take them). Q4_K mins and Q6_K's -32 offset come from
// the activation block sums with vpdpwssd on int16 pairs (Q4_K: one per pair
// of sub-blocks, over BlockQ8_K::bsums32). See the header for
// the floating-point order (that of vec_dot::dot_ref).
//
// Loop order per thread: tokens in chunks (their activations stay in L2),
// then 16-row tiles, then blocks of kSbBlock super-blocks packed into an L1
// scratch, then register tiles of up to kTokenTile tokens whose accumulators
// live in a per-thread buffer between super-block blocks. Each tile is first
// copied to a per-thread stage in address order (see stage_row_tile).
// Decode-sized n takes the row-wise kernels instead (see the header).
#include "kernels/matmul_kquant_avx512.h"

#include "kernels/kquant_packed_avx512.h"

// GCC 12's AVX-512 intrinsics seed their "undefined" pass-through operands
// with a self-initialized variable, which -Wuninitialized reports when inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <array>
#include <cassert>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/matmul_avx2.h"
#include "kernels/quant.h"
#include "kernels/vec_dot.h"
#include "util/thread_pool.h"

namespace strata::avx512_kquant {
namespace {

static_assert(kRowShare == kRowTile, "threads get whole row tiles");

constexpr int kTokenTile = 8;  // tokens per register tile
// Up to this many tokens (decode) the row-wise kernels run instead of the
// tiles: with weights in DRAM (TinyLlama shapes, 2 threads) they are faster
// for n <= 2, even at 3 and slower from 4 on, where a tile's packing is
// shared by enough tokens.
constexpr int kGemvMaxTokens = 3;
// How far ahead of the bytes in use streaming reads prefetch (row-wise
// kernels, tile staging).
constexpr size_t kPrefetchBytes = 4096;
// kTiled16 Q4_K: how far ahead of the super-block in use the stream is
// prefetched (measured best of 2304, 4096, 8192 and 16384 bytes on a Xeon,
// 1.1B shapes, n = 1 and 8).
constexpr size_t kTiledPrefetchBytes = 4096;
// kTiled16: up to this many tokens each token tile of kFusedTokenTile
// streams the row tile and unpacks it in registers (q4_k_tiled_tokens,
// q6_k_tiled_tokens); more share one unpacked copy per kSbBlock
// super-blocks (matmul_kind). Q4_K's unpacking is cheap enough to repeat
// for up to 4 token tiles: on Zen 4, 2 threads (build/bench_kernels
// --benchmark_filter='BM_ModelStep/type:(12|14)/n:(24|32)', minimum of 5,
// two alternated rounds), a pass over the 1.1B layer weights took
// 115-120 / 148-161 ms for 24 / 32 tokens with the shared copy and
// 90-94 / 130-132 fused, and prefill of 64 tokens was 0.91x fused; Q6_K's
// six-bit unpacking is not (24 / 32 tokens: 136-140 / 167-171 ms shared,
// 176-177 / 247-254 fused). On a Xeon the shared copy was as fast as the
// fused path from 24 tokens on.
constexpr int64_t kTiledFusedMaxTokensQ4K = 32;
constexpr int64_t kTiledFusedMaxTokensQ6K = 16;
constexpr int kFusedTokenTile = 8;
constexpr int kSbBlock = 4;  // super-blocks packed at a time (~20 KiB)
// Activation bytes per token chunk: the chunk's activations stay in L2 while
// every row tile of the thread runs over them.
constexpr size_t kTokenChunkBytes = 768 * 1024;

// Offsets inside a Q8_K activation block.
constexpr size_t kXQs = offsetof(BlockQ8_K, qs);
constexpr size_t kXBsums = offsetof(BlockQ8_K, bsums);
constexpr size_t kXBsums32 = offsetof(BlockQ8_K, bsums32);

// Per-output running sums between super-block blocks.
struct alignas(64) Accum {
  __m512 sum;
  __m512 min;  // Q4_K only
};

// Copies the tile's rows (contiguous in the weight) into *stage in address
// order, prefetching kPrefetchBytes ahead, and returns the tile over the
// copy. Packing 16 interleaved rows straight from DRAM streams at a fraction
// of the bandwidth (per-row or next-tile prefetches did not fix it); the
// copy is cheap next to packing and runs at the row-wise kernels' rate.
}  // namespace

RowTile stage_row_tile(const WeightView& w, int64_t r0, int64_t r_end,
                       std::vector<uint8_t>* stage) {
  RowTile t;
  t.num_rows = static_cast<int>(std::min<int64_t>(kRowTile, r_end - r0));
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const uint8_t* data_end = wd + static_cast<size_t>(w.rows) * w.row_bytes;
  const uint8_t* src = wd + static_cast<size_t>(r0) * w.row_bytes;
  const size_t bytes = static_cast<size_t>(t.num_rows) * w.row_bytes;
  if (stage->size() < kRowTile * w.row_bytes) stage->resize(kRowTile * w.row_bytes);
  uint8_t* dst = stage->data();
  size_t o = 0;
  for (; o + 64 <= bytes; o += 64) {
    if (src + o + kPrefetchBytes < data_end) {
      _mm_prefetch(reinterpret_cast<const char*>(src + o + kPrefetchBytes), _MM_HINT_T0);
    }
    _mm512_storeu_si512(dst + o, _mm512_loadu_si512(src + o));
  }
  std::memcpy(dst + o, src + o, bytes - o);
  for (int j = 0; j < kRowTile; ++j) {
    t.row[j] = dst + static_cast<size_t>(std::min(j, t.num_rows - 1)) * w.row_bytes;
  }
  return t;
}

namespace {

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Broadcast of the activation dword at p (folds into vpdpbusd's {1to16}).
inline __m512i bcast32(const uint8_t* p) {
  return _mm512_set1_epi32(static_cast<int32_t>(load_u32(p)));
}

// ---------------------------------------------------------------------------
// Transposes (lane j of every output belongs to row j).

// r[j] holds 16 dwords of row j; afterwards r[k] holds dword k of every row.
inline void transpose16x16(__m512i r[16]) {
  __m512i t[16], u[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // u[4i + k], 128-bit lane L: rows 4i..4i+3, dword 4L + k.
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  // For each k, a 4x4 transpose of 128-bit lanes across u[k], u[4+k], ...
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x88);
    const __m512i v1 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xDD);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x88);
    const __m512i v3 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xDD);
    r[k] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    r[4 + k] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    r[8 + k] = _mm512_shuffle_i32x4(v0, v2, 0xDD);
    r[12 + k] = _mm512_shuffle_i32x4(v1, v3, 0xDD);
  }
}

// The four dwords at byte offset off of each row: out[k] lane j = row j's
// dword k.
inline void load_transpose16x4(const RowTile& rt, size_t off, __m512i out[4]) {
  __m512i b[4];  // b[m], 128-bit lane L: row 4L + m
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    const auto* p0 = reinterpret_cast<const __m128i*>(rt.row[m] + off);
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(p0));
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rt.row[4 + m] + off)), 1);
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rt.row[8 + m] + off)), 2);
    v = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(rt.row[12 + m] + off)), 3);
    b[m] = v;
  }
  const __m512i a0 = _mm512_unpacklo_epi32(b[0], b[1]);
  const __m512i a1 = _mm512_unpackhi_epi32(b[0], b[1]);
  const __m512i a2 = _mm512_unpacklo_epi32(b[2], b[3]);
  const __m512i a3 = _mm512_unpackhi_epi32(b[2], b[3]);
  out[0] = _mm512_unpacklo_epi64(a0, a2);
  out[1] = _mm512_unpackhi_epi64(a0, a2);
  out[2] = _mm512_unpacklo_epi64(a1, a3);
  out[3] = _mm512_unpackhi_epi64(a1, a3);
}

// Byte k (0..3) of every dword, zero-extended.
inline __m512i byte_of(__m512i v, int k) {
  return _mm512_and_si512(_mm512_srli_epi32(v, 8 * k), _mm512_set1_epi32(0xFF));
}

// ---------------------------------------------------------------------------
// Q4_K

// The Q4_K header of 16 rows, h[0] lane j = row j's d | dmin << 16 and
// h[1..3] its 12 scale bytes, into p's d, dmin, sc and mm.
[[gnu::always_inline]] inline void q4_k_header(const __m512i h[4], PackedQ4K* p) {
  p->d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h[0]));
  p->dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h[0], 16)));
  // Byte k of sc_lo/mn_lo: sub-block k; of sc_hi/mn_hi: sub-block 4 + k
  // (the bits of q4_k_scale_min).
  const __m512i m6 = _mm512_set1_epi32(0x3f3f3f3f);
  const __m512i m4 = _mm512_set1_epi32(0x0f0f0f0f);
  const __m512i top2 = _mm512_set1_epi32(0x30303030);
  const __m512i sc_lo = _mm512_and_si512(h[1], m6);
  const __m512i mn_lo = _mm512_and_si512(h[2], m6);
  const __m512i sc_hi = _mm512_or_si512(_mm512_and_si512(h[3], m4),
                                        _mm512_and_si512(_mm512_srli_epi32(h[1], 2), top2));
  const __m512i mn_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(h[3], 4), m4),
                                        _mm512_and_si512(_mm512_srli_epi32(h[2], 2), top2));
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    p->sc[k] = byte_of(sc_lo, k);
    p->sc[4 + k] = byte_of(sc_hi, k);
  }
  // Pair c = sub-blocks (2c, 2c + 1): bytes (0, 1) of mn_lo (c = 0), (2, 3)
  // of mn_lo (c = 1), then of mn_hi, as the two int16s of a dword.
  const __m512i byte0 = _mm512_set1_epi32(0xFF), byte2 = _mm512_set1_epi32(0xFF0000);
  const __m512i mn[2] = {mn_lo, mn_hi};
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    p->mm[2 * h] = _mm512_or_si512(_mm512_and_si512(mn[h], byte0),
                                   _mm512_and_si512(_mm512_slli_epi32(mn[h], 8), byte2));
    p->mm[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(mn[h], 16), byte0),
                                       _mm512_and_si512(_mm512_srli_epi32(mn[h], 8), byte2));
  }
}

// Quant dword D (0..31) of 16 rows (lane j = row j) into p's groups: qs
// dword 8c + l (chunk c = 64 elements) holds elements 64c + 4l.. in its low
// nibbles and 64c + 32 + 4l.. in its high nibbles.
[[gnu::always_inline]] inline void q4_k_quant_dword(__m512i r, int dword, PackedQ4K* p) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const int c = dword / 8, l = dword % 8;
  p->q[16 * c + l] = _mm512_and_si512(r, low4);
  p->q[16 * c + 8 + l] = _mm512_and_si512(_mm512_srli_epi32(r, 4), low4);
}

// kTiled16 Q4_K: vectors per super-block of a tile (4 header + 32 quants).
constexpr int kQ4KTiledVectors = 4 + 32;
constexpr size_t kQ4KTiledBlockBytes = kQ4KTiledVectors * 64;
static_assert(kQ4KTiledBlockBytes == kRowTile * sizeof(BlockQ4_K), "the GGUF bytes, transposed");

// Super-block `src` of a kTiled16 tile into *p.
inline void unpack_q4_k_tiled(const uint8_t* src, PackedQ4K* p) {
  __m512i h[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) h[i] = _mm512_load_si512(src + 64 * i);
  q4_k_header(h, p);
#pragma GCC unroll 32
  for (int d = 0; d < 32; ++d) q4_k_quant_dword(_mm512_load_si512(src + 64 * (4 + d)), d, p);
}

}  // namespace

void pack_q4_k(const RowTile& rt, int64_t b, PackedQ4K* p) {
  const size_t off = static_cast<size_t>(b) * sizeof(BlockQ4_K);
  // Header: dword 0 = d | dmin << 16, dwords 1..3 = the 12 scale bytes.
  __m512i h[4];
  load_transpose16x4(rt, off, h);
  q4_k_header(h, p);
#pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {
    __m512i r[16];
#pragma GCC unroll 16
    for (int j = 0; j < kRowTile; ++j) {
      r[j] = _mm512_loadu_si512(rt.row[j] + off + offsetof(BlockQ4_K, qs) + 64 * half);
    }
    transpose16x16(r);
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) q4_k_quant_dword(r[k], 16 * half + k, p);
  }
}

namespace {

// Adds pair c of sub-blocks (64 elements) of a super-block to T tokens'
// sums: weights(g, &wl, &wh) gives group g's low- and high-nibble vectors
// (q[16c + g] and q[16c + 8 + g]), sc_lo / sc_hi the pair's scales, scale[t]
// token t's d_w * d_x. Integer partial sums per sub-block: with few tokens,
// P chains each (the groups g with g % P == i), so the vpdpbusd latency is
// not the bound; integer sums are exact, so their order does not change a bit.
template <int T, class Weights>
[[gnu::always_inline]] inline void q4_k_pair(int c, const Weights& weights, __m512i sc_lo,
                                             __m512i sc_hi, const __m512* scale,
                                             const uint8_t* const* xb, __m512* acc) {
  const __m512i zero = _mm512_setzero_si512();
  constexpr int P = T >= 4 ? 1 : (T >= 2 ? 2 : 4);
  __m512i lo[P][T], hi[P][T];
#pragma GCC unroll 4
  for (int i = 0; i < P; ++i)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) lo[i][t] = hi[i][t] = zero;
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const int il = 16 * c + g, ih = 16 * c + 8 + g;
    __m512i wl, wh;
    weights(g, &wl, &wh);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      lo[g % P][t] = _mm512_dpbusd_epi32(lo[g % P][t], wl, bcast32(xb[t] + kXQs + 4 * il));
      hi[g % P][t] = _mm512_dpbusd_epi32(hi[g % P][t], wh, bcast32(xb[t] + kXQs + 4 * ih));
    }
  }
#pragma GCC unroll 4
  for (int i = 1; i < P; ++i)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      lo[0][t] = _mm512_add_epi32(lo[0][t], lo[i][t]);
      hi[0][t] = _mm512_add_epi32(hi[0][t], hi[i][t]);
    }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    const __m512i s =
        _mm512_add_epi32(_mm512_mullo_epi32(lo[0][t], sc_lo), _mm512_mullo_epi32(hi[0][t], sc_hi));
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), scale[t], acc[t]);
  }
}

// Token t's d_w * d_x for T tokens.
template <int T>
[[gnu::always_inline]] inline void q4_k_scales(__m512 d, const uint8_t* const* xb, __m512* scale) {
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    scale[t] = _mm512_mul_ps(d, _mm512_set1_ps(reinterpret_cast<const BlockQ8_K*>(xb[t])->d));
  }
}

// Adds super-block p (activation blocks xb[t]) to T tokens' sums.
template <int T>
[[gnu::always_inline]] inline void q4_k_sums(const PackedQ4K& p, const uint8_t* const* xb,
                                             __m512* acc) {
  __m512 scale[T];
  q4_k_scales<T>(p.d, xb, scale);
#pragma GCC unroll 1
  for (int c = 0; c < 4; ++c) {
    const auto weights = [&](int g, __m512i* wl, __m512i* wh) {
      *wl = p.q[16 * c + g];
      *wh = p.q[16 * c + 8 + g];
    };
    q4_k_pair<T>(c, weights, p.sc[2 * c], p.sc[2 * c + 1], scale, xb, acc);
  }
}

template <int T>
[[gnu::always_inline]] inline void q4_k_mins(const PackedQ4K& p, const uint8_t* const* xb,
                                             __m512* acc) {
  const __m512i zero = _mm512_setzero_si512();
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    const __m512 scale =
        _mm512_mul_ps(p.dmin, _mm512_set1_ps(reinterpret_cast<const BlockQ8_K*>(xb[t])->d));
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m512i m = _mm512_dpwssd_epi32(zero, p.mm[c], bcast32(xb[t] + kXBsums32 + 4 * c));
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m), scale, acc[t]);
    }
  }
}

// T tokens of one kTiled16 Q4_K row tile over all nb super-blocks, the
// quants unpacked in registers as they stream in and used at once (no
// scratch): the path for a few tokens (decode, batched decode, speculative
// verification), where every super-block is used by these T tokens only.
// The operations on each output are q4_k_sums' and q4_k_mins', in the same
// order, so the bits are the scratch path's. x[t] is token t's first
// activation block; out[16 t .. 16 t + 15] gets its 16 outputs.
template <int T>
void q4_k_tiled_tokens(const uint8_t* tile, int64_t nb, const uint8_t* data_end,
                       const uint8_t* const* x, float* out) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  __m512 sum[T], min[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) sum[t] = min[t] = _mm512_setzero_ps();
  PackedQ4K hdr;  // header fields only (sc, mm, d, dmin)
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* src = tile + static_cast<size_t>(b) * kQ4KTiledBlockBytes;
    // The stream kTiledPrefetchBytes ahead, one line per vector as it is
    // used: a burst of 36 prefetches would wait on the line fill buffers.
    const char* ahead = src + kTiledPrefetchBytes + kQ4KTiledBlockBytes <= data_end
                            ? reinterpret_cast<const char*>(src + kTiledPrefetchBytes)
                            : nullptr;
    if (ahead != nullptr) {
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) _mm_prefetch(ahead + 64 * i, _MM_HINT_T0);
    }
    __m512i h[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) h[i] = _mm512_load_si512(src + 64 * i);
    q4_k_header(h, &hdr);
    const uint8_t* xb[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) xb[t] = x[t] + static_cast<size_t>(b) * sizeof(BlockQ8_K);
    __m512 scale[T];
    q4_k_scales<T>(hdr.d, xb, scale);
#pragma GCC unroll 1
    for (int c = 0; c < 4; ++c) {
      const auto weights = [&](int g, __m512i* wl, __m512i* wh) {
        if (ahead != nullptr) _mm_prefetch(ahead + 64 * (4 + 8 * c + g), _MM_HINT_T0);
        const __m512i r = _mm512_load_si512(src + 64 * (4 + 8 * c + g));
        *wl = _mm512_and_si512(r, low4);
        *wh = _mm512_and_si512(_mm512_srli_epi32(r, 4), low4);
      };
      q4_k_pair<T>(c, weights, hdr.sc[2 * c], hdr.sc[2 * c + 1], scale, xb, sum);
    }
    q4_k_mins<T>(hdr, xb, min);
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + 16 * t, _mm512_sub_ps(sum[t], min[t]));
}

using TiledTokensFn = void (*)(const uint8_t*, int64_t, const uint8_t*, const uint8_t* const*,
                               float*);

template <int... Ts>
constexpr std::array<TiledTokensFn, sizeof...(Ts)> q4_k_tiled_table(
    std::integer_sequence<int, Ts...>) {
  return {&q4_k_tiled_tokens<Ts + 1>...};
}

// ---------------------------------------------------------------------------
// Q6_K

}  // namespace

namespace {

// The Q6_K header of 16 rows, s[k] lane j = row j's scale dword k and dh
// the 16 rows' d, into p's sc, nsc and d.
[[gnu::always_inline]] inline void q6_k_header(const __m512i s[4], __m256i dh, PackedQ6K* p) {
#pragma GCC unroll 16
  for (int g = 0; g < 16; ++g) {
    p->sc[g] = _mm512_srai_epi32(_mm512_slli_epi32(s[g / 4], 24 - 8 * (g % 4)), 24);
  }
  const __m512i lo16 = _mm512_set1_epi32(0xFFFF);
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    const __m512i a = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(p->sc[2 * i], 5));
    const __m512i c =
        _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(p->sc[2 * i + 1], 5));
    p->nsc[i] = _mm512_or_si512(_mm512_and_si512(a, lo16), _mm512_slli_epi32(c, 16));
  }
  p->d = _mm512_cvtph_ps(dh);
}

// Group vector q[32h + 8j + g] (j = 0..3) from ql dword 16h + g (j even) or
// 16h + 8 + g (j odd) and qh dword 8h + g (lane = row): qh bytes 32h + l
// hold bits 2j..2j+1 of element 128h + 32j + l; ql dword 16h + i, i < 8,
// holds elements 128h + 4i.. (j = 0, low nibbles) and 128h + 64 + 4i..
// (j = 2, high); i >= 8: j = 1 and j = 3.
[[gnu::always_inline]] inline __m512i q6_k_group(__m512i ql, __m512i hb, int j) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i bits45 = _mm512_set1_epi8(0x30);
  __m512i hbits;
  switch (j) {
    case 0:
      hbits = _mm512_slli_epi32(hb, 4);
      break;
    case 1:
      hbits = _mm512_slli_epi32(hb, 2);
      break;
    case 2:
      hbits = hb;
      break;
    default:
      hbits = _mm512_srli_epi32(hb, 2);
      break;
  }
  const __m512i lo = j >= 2 ? _mm512_srli_epi32(ql, 4) : ql;
  // (lo & 0x0F) | (hbits & 0x30): ternary logic 0xE4 with c = low4 keeps
  // a's low nibble and b's high one, b's bits past 0x30 masked first.
  return _mm512_ternarylogic_epi32(lo, _mm512_and_si512(hbits, bits45), low4, 0xE4);
}

// Half h's 32 group vectors from qh (the 16 qh dwords) and ql (the 16 ql
// dwords 16h..16h + 15).
[[gnu::always_inline]] inline void q6_k_quants(const __m512i* qh, int h, const __m512i* ql,
                                               PackedQ6K* p) {
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m512i hb = qh[8 * h + g];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j)
      p->q[32 * h + 8 * j + g] = q6_k_group(ql[j % 2 == 0 ? g : 8 + g], hb, j);
  }
}

// kTiled16 Q6_K: vectors per super-block of a tile: 4 of scale dwords, 16
// of qh dwords, 32 of ql dwords, then the 16 rows' d (32 bytes, 32 zero).
constexpr int kQ6KTiledScales = 0, kQ6KTiledQh = 4, kQ6KTiledQl = 20, kQ6KTiledD = 52;
constexpr size_t kQ6KTiledBlockBytes = 53 * 64;
static_assert(kQ6KTiledBlockBytes == kRowTile * sizeof(BlockQ6_K) + 32,
              "the GGUF bytes transposed, plus 32 bytes");

inline void unpack_q6_k_tiled(const uint8_t* src, PackedQ6K* p) {
  __m512i sv[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) sv[i] = _mm512_load_si512(src + 64 * (kQ6KTiledScales + i));
  q6_k_header(sv, _mm256_load_si256(reinterpret_cast<const __m256i*>(src + 64 * kQ6KTiledD)), p);
  __m512i qh[16], ql[16];
#pragma GCC unroll 16
  for (int k = 0; k < 16; ++k) qh[k] = _mm512_load_si512(src + 64 * (kQ6KTiledQh + k));
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) ql[k] = _mm512_load_si512(src + 64 * (kQ6KTiledQl + 16 * h + k));
    q6_k_quants(qh, h, ql, p);
  }
}

// The 16 rows' d of super-block b.
inline __m256i load_q6_k_d(const RowTile& rt, size_t off) {
  alignas(32) uint16_t dh[kRowTile];
  for (int j = 0; j < kRowTile; ++j) {
    std::memcpy(&dh[j], rt.row[j] + off + offsetof(BlockQ6_K, d), sizeof(uint16_t));
  }
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(dh));
}

}  // namespace

void pack_q6_k(const RowTile& rt, int64_t b, PackedQ6K* p) {
  const size_t off = static_cast<size_t>(b) * sizeof(BlockQ6_K);
  // Scales: 16 signed bytes per row.
  __m512i s[4];
  load_transpose16x4(rt, off + offsetof(BlockQ6_K, scales), s);
  q6_k_header(s, load_q6_k_d(rt, off), p);
  __m512i qh[16];
#pragma GCC unroll 16
  for (int j = 0; j < kRowTile; ++j) {
    qh[j] = _mm512_loadu_si512(rt.row[j] + off + offsetof(BlockQ6_K, qh));
  }
  transpose16x16(qh);  // qh[8h + g]: bytes 32h + 4g..
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    __m512i ql[16];
#pragma GCC unroll 16
    for (int j = 0; j < kRowTile; ++j) {
      ql[j] = _mm512_loadu_si512(rt.row[j] + off + offsetof(BlockQ6_K, ql) + 64 * h);
    }
    transpose16x16(ql);
    q6_k_quants(qh, h, ql, p);
  }
}

namespace {

template <int T>
[[gnu::always_inline]] inline void q6_k_sums(const PackedQ6K& p, const uint8_t* const* xb,
                                             __m512* acc) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i isum[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) isum[t] = zero;
#pragma GCC unroll 2
  for (int s = 0; s < 16; ++s) {
    __m512i part[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) part[t] = zero;
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      const int i = 4 * s + g;
      const __m512i w = p.q[i];
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        part[t] = _mm512_dpbusd_epi32(part[t], w, bcast32(xb[t] + kXQs + 4 * i));
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(part[t], p.sc[s]));
    }
  }
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
      isum[t] = _mm512_dpwssd_epi32(isum[t], p.nsc[i], bcast32(xb[t] + kXBsums + 4 * i));
    }
    // (d_w * d_x) * float(isum), then a separate add: the reference's order.
    const __m512 scale = _mm512_mul_round_ps(
        p.d, _mm512_set1_ps(reinterpret_cast<const BlockQ8_K*>(xb[t])->d), kRound);
    acc[t] = _mm512_add_round_ps(
        acc[t], _mm512_mul_round_ps(scale, _mm512_cvtepi32_ps(isum[t]), kRound), kRound);
  }
}

// T tokens of one kTiled16 Q6_K row tile over all nb super-blocks, the
// group vectors built in registers as the stream comes in (as
// q4_k_tiled_tokens). Sub-blocks are summed in another order than
// q6_k_sums' (two at a time per half and j), but in exact int32, so each
// block's integer and everything after it are q6_k_sums' bits.
template <int T>
void q6_k_tiled_tokens(const uint8_t* tile, int64_t nb, const uint8_t* data_end,
                       const uint8_t* const* x, float* out) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  PackedQ6K hdr;  // header fields only (sc, nsc, d)
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* src = tile + static_cast<size_t>(b) * kQ6KTiledBlockBytes;
    // One prefetch per group step (64 of them; the block has 53 lines).
    const char* ahead = src + kTiledPrefetchBytes + kQ6KTiledBlockBytes <= data_end
                            ? reinterpret_cast<const char*>(src + kTiledPrefetchBytes)
                            : nullptr;
    __m512i sv[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) sv[i] = _mm512_load_si512(src + 64 * (kQ6KTiledScales + i));
    q6_k_header(sv, _mm256_load_si256(reinterpret_cast<const __m256i*>(src + 64 * kQ6KTiledD)),
                &hdr);
    const uint8_t* xb[T];
    __m512i isum[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      xb[t] = x[t] + static_cast<size_t>(b) * sizeof(BlockQ8_K);
      isum[t] = zero;
    }
#pragma GCC unroll 1
    for (int h = 0; h < 2; ++h) {
      // j unrolled: q6_k_group's shifts are immediates, not branches.
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const int hj = 4 * h + j;
        __m512i part0[T], part1[T];  // sub-blocks 8h + 2j and 8h + 2j + 1
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) part0[t] = part1[t] = zero;
#pragma GCC unroll 8
        for (int g = 0; g < 8; ++g) {
          const int line = 8 * hj + g;
          if (ahead != nullptr && line < 53) _mm_prefetch(ahead + 64 * line, _MM_HINT_T0);
          const __m512i ql =
              _mm512_load_si512(src + 64 * (kQ6KTiledQl + 16 * h + (j % 2 == 0 ? g : 8 + g)));
          const __m512i hb = _mm512_load_si512(src + 64 * (kQ6KTiledQh + 8 * h + g));
          const __m512i q = q6_k_group(ql, hb, j);
          const int i = 32 * h + 8 * j + g;
#pragma GCC unroll 8
          for (int t = 0; t < T; ++t) {
            if (g < 4) {
              part0[t] = _mm512_dpbusd_epi32(part0[t], q, bcast32(xb[t] + kXQs + 4 * i));
            } else {
              part1[t] = _mm512_dpbusd_epi32(part1[t], q, bcast32(xb[t] + kXQs + 4 * i));
            }
          }
        }
        const int s0 = 8 * h + 2 * j;
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          isum[t] = _mm512_add_epi32(
              isum[t], _mm512_add_epi32(_mm512_mullo_epi32(part0[t], hdr.sc[s0]),
                                        _mm512_mullo_epi32(part1[t], hdr.sc[s0 + 1])));
        }
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) {
        isum[t] = _mm512_dpwssd_epi32(isum[t], hdr.nsc[i], bcast32(xb[t] + kXBsums + 4 * i));
      }
      const __m512 scale = _mm512_mul_round_ps(
          hdr.d, _mm512_set1_ps(reinterpret_cast<const BlockQ8_K*>(xb[t])->d), kRound);
      acc[t] = _mm512_add_round_ps(
          acc[t], _mm512_mul_round_ps(scale, _mm512_cvtepi32_ps(isum[t]), kRound), kRound);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_storeu_ps(out + 16 * t, acc[t]);
}

template <int... Ts>
constexpr std::array<TiledTokensFn, sizeof...(Ts)> q6_k_tiled_table(
    std::integer_sequence<int, Ts...>) {
  return {&q6_k_tiled_tokens<Ts + 1>...};
}

// Q6_K for a few tokens, one row at a time in address order (see
// kGemvMaxTokens): vector c holds elements 64c..64c+63 in order, so the
// activations load as they are; each lane's four products fit int16, so the
// sub-block scales apply with vpdpwssd; the per-block integer sum is reduced
// horizontally and scaled as in q6_k_sums (same result bit for bit).
template <int T>
void q6_k_gemv(const WeightView& w, const uint8_t* const* x, float* const* y, int64_t r0,
               int64_t r1) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const int64_t nb = w.cols / kQK_K;
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i bits45 = _mm512_set1_epi8(0x30);
  // Shifts bringing qh bits 2k..2k+1 to bits 4..5: k = 0 | 1 and k = 2 | 3
  // for the two 256-bit halves.
  const __m512i shl_01 = _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2);
  const __m512i shr_23 = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
  __m512i scale_idx[4];
  for (int i = 0; i < 4; ++i) {
    scale_idx[i] = _mm512_setr_epi32(4 * i, 4 * i, 4 * i, 4 * i, 4 * i + 1, 4 * i + 1, 4 * i + 1,
                                     4 * i + 1, 4 * i + 2, 4 * i + 2, 4 * i + 2, 4 * i + 2,
                                     4 * i + 3, 4 * i + 3, 4 * i + 3, 4 * i + 3);
  }
  for (int64_t r = r0; r < r1; ++r) {
    const auto* blocks =
        reinterpret_cast<const BlockQ6_K*>(wd + static_cast<size_t>(r) * w.row_bytes);
    __m128 acc[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ6_K& blk = blocks[b];
      const char* ahead = reinterpret_cast<const char*>(&blk) + kPrefetchBytes;
      for (size_t o = 0; o < sizeof(BlockQ6_K); o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
      __m512i q[4];
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m512i ql = _mm512_loadu_si512(blk.ql + 64 * h);
        const __m512i qh = _mm512_broadcast_i64x4(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qh + 32 * h)));
        q[2 * h] = _mm512_or_si512(_mm512_and_si512(ql, low4),
                                   _mm512_and_si512(_mm512_sllv_epi64(qh, shl_01), bits45));
        q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                       _mm512_and_si512(_mm512_srlv_epi64(qh, shr_23), bits45));
      }
      const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk.scales));
      // (sc, 0) int16 pairs per dword, so vpdpwssd multiplies by sc alone.
      const __m512i sc32 = _mm512_and_si512(_mm512_cvtepi8_epi32(sc8), _mm512_set1_epi32(0xFFFF));
      __m512i scv[4];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i) scv[i] = _mm512_permutexvar_epi32(scale_idx[i], sc32);
      const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
      const __m512i nsc = _mm512_castsi256_si512(
          _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5)));
      const __m128 d = _mm_set_ss(_cvtsh_ss(blk.d));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) {
        const uint8_t* xb = x[t] + static_cast<size_t>(b) * sizeof(BlockQ8_K);
        const __m512i bsums = _mm512_castsi256_si512(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + kXBsums)));
        __m512i isum =
            _mm512_dpwssd_epi32(zero, _mm512_zextsi256_si512(_mm512_castsi512_si256(nsc)),
                                _mm512_zextsi256_si512(_mm512_castsi512_si256(bsums)));
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const __m512i dot =
              _mm512_dpbusd_epi32(zero, q[i], _mm512_loadu_si512(xb + kXQs + 64 * i));
          isum = _mm512_dpwssd_epi32(isum, dot, scv[i]);
        }
        const int sumi = _mm512_reduce_add_epi32(isum);
        const __m128 scale =
            _mm_mul_round_ss(d, _mm_set_ss(reinterpret_cast<const BlockQ8_K*>(xb)->d), kRound);
        acc[t] = _mm_add_round_ss(
            acc[t], _mm_mul_round_ss(scale, _mm_cvtsi32_ss(_mm_setzero_ps(), sumi), kRound),
            kRound);
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) y[t][r] = _mm_cvtss_f32(acc[t]);
  }
}

// Q4_K for a few tokens, one row at a time in address order: vector c holds
// elements 64c..64c+63 in order (chunk c's low nibbles, then its high
// nibbles), lanes 0..7 of sub-block 2c and 8..15 of 2c+1. The eight
// sub-block dots are reduced horizontally next to the eight activation
// pair sums (bsum_2j + bsum_2j+1), one vpmulld applies scales and mins, and
// adjacent lanes give the pair sums S_c and M_c, accumulated as in
// q4_k_sums / q4_k_mins (lane 0: sums, lane 1: mins).
template <int T>
void q4_k_gemv(const WeightView& w, const uint8_t* const* x, float* const* y, int64_t r0,
               int64_t r1) {
  const int64_t nb = w.cols / kQK_K;
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const __m512i zero = _mm512_setzero_si512();
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  const __m512i nibble_shift = _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4);
  // Sub-block j's sum sits in 128-bit lane j % 4, dword j / 4; then the pair sums.
  const __m512i dots_and_bsums =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 16, 17, 18, 19, 20, 21, 22, 23);
  const __m512i interleave = _mm512_setr_epi32(0, 8, 2, 10, 4, 12, 6, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  for (int64_t r = r0; r < r1; ++r) {
    const auto* blocks =
        reinterpret_cast<const BlockQ4_K*>(wd + static_cast<size_t>(r) * w.row_bytes);
    __m128 acc[T];  // [sum, min, -, -]
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[t] = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const BlockQ4_K& blk = blocks[b];
      const char* ahead = reinterpret_cast<const char*>(&blk) + kPrefetchBytes;
      for (size_t o = 0; o < sizeof(BlockQ4_K); o += 64) _mm_prefetch(ahead + o, _MM_HINT_T0);
      // The 6-bit scales and mins (q4_k_scale_min): lanes 0..7 sc_j, 8..15 m_j.
      uint32_t u[3];
      std::memcpy(u, blk.scales, sizeof(u));
      const uint32_t sc_lo = u[0] & 0x3f3f3f3fu, mn_lo = u[1] & 0x3f3f3f3fu;
      const uint32_t sc_hi = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);
      const uint32_t mn_hi = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4);
      const __m512i scale_min = _mm512_cvtepu8_epi32(
          _mm_set_epi64x(static_cast<int64_t>(mn_lo | static_cast<uint64_t>(mn_hi) << 32),
                         static_cast<int64_t>(sc_lo | static_cast<uint64_t>(sc_hi) << 32)));
      __m512i q[4];
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) {
        const __m512i raw = _mm512_broadcast_i64x4(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk.qs + 32 * c)));
        q[c] = _mm512_and_si512(_mm512_srlv_epi64(raw, nibble_shift), low4);
      }
      const __m128 d_dmin = _mm_setr_ps(_cvtsh_ss(blk.d), _cvtsh_ss(blk.dmin), 0.0f, 0.0f);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        const uint8_t* xb = x[t] + static_cast<size_t>(b) * sizeof(BlockQ8_K);
        __m512i dot[4];
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
          dot[c] = _mm512_dpbusd_epi32(zero, q[c], _mm512_loadu_si512(xb + kXQs + 64 * c));
        }
        // 128-bit lane k: sub-block k's partials (u01), 4 + k's (u23).
        const __m512i u01 = _mm512_add_epi32(_mm512_shuffle_i32x4(dot[0], dot[1], 0x88),
                                             _mm512_shuffle_i32x4(dot[0], dot[1], 0xDD));
        const __m512i u23 = _mm512_add_epi32(_mm512_shuffle_i32x4(dot[2], dot[3], 0x88),
                                             _mm512_shuffle_i32x4(dot[2], dot[3], 0xDD));
        __m512i v =
            _mm512_add_epi32(_mm512_unpacklo_epi32(u01, u23), _mm512_unpackhi_epi32(u01, u23));
        v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_BADC));
        const __m256i pair_bsums = _mm256_cvtepi16_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i*>(xb + kXBsums32)));
        v = _mm512_permutex2var_epi32(v, dots_and_bsums, _mm512_castsi256_si512(pair_bsums));
        v = _mm512_mullo_epi32(v, scale_min);
        v = _mm512_add_epi32(v, _mm512_shuffle_epi32(v, _MM_PERM_CDAB));
        const __m256 f =
            _mm256_cvtepi32_ps(_mm512_castsi512_si256(_mm512_permutexvar_epi32(interleave, v)));
        const __m128 f01 = _mm256_castps256_ps128(f);    // [s0 m0 s1 m1]
        const __m128 f23 = _mm256_extractf128_ps(f, 1);  // [s2 m2 s3 m3]
        const __m128 scale =
            _mm_mul_ps(d_dmin, _mm_set1_ps(reinterpret_cast<const BlockQ8_K*>(xb)->d));
        acc[t] = _mm_fmadd_ps(f01, scale, acc[t]);
        acc[t] = _mm_fmadd_ps(_mm_movehl_ps(f01, f01), scale, acc[t]);
        acc[t] = _mm_fmadd_ps(f23, scale, acc[t]);
        acc[t] = _mm_fmadd_ps(_mm_movehl_ps(f23, f23), scale, acc[t]);
      }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      y[t][r] = _mm_cvtss_f32(_mm_sub_ss(acc[t], _mm_movehdup_ps(acc[t])));
    }
  }
}

// ---------------------------------------------------------------------------
// Driver.

struct KindQ4K {
  using Packed = PackedQ4K;
  static constexpr size_t kTiledBlockBytes = kQ4KTiledBlockBytes;
  static void pack(const RowTile& rt, int64_t b, Packed* p) { pack_q4_k(rt, b, p); }
  static void unpack_tiled(const uint8_t* src, Packed* p) { unpack_q4_k_tiled(src, p); }
  template <int T>
  [[gnu::always_inline]] static void run(const Packed* p, int num_sb, const uint8_t* const* x0,
                                         __m512* sum, __m512* min) {
    const uint8_t* xb[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) xb[t] = x0[t];
    for (int k = 0; k < num_sb; ++k) {
      q4_k_sums<T>(p[k], xb, sum);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) xb[t] += sizeof(BlockQ8_K);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) xb[t] = x0[t];
    for (int k = 0; k < num_sb; ++k) {
      q4_k_mins<T>(p[k], xb, min);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) xb[t] += sizeof(BlockQ8_K);
    }
  }
  static __m512 finish(__m512 sum, __m512 min) {
    return _mm512_sub_ps(sum, min);
  }
};

struct KindQ6K {
  using Packed = PackedQ6K;
  static constexpr size_t kTiledBlockBytes = kQ6KTiledBlockBytes;
  static void pack(const RowTile& rt, int64_t b, Packed* p) { pack_q6_k(rt, b, p); }
  static void unpack_tiled(const uint8_t* src, Packed* p) { unpack_q6_k_tiled(src, p); }
  template <int T>
  [[gnu::always_inline]] static void run(const Packed* p, int num_sb, const uint8_t* const* x0,
                                         __m512* sum, __m512*) {
    const uint8_t* xb[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) xb[t] = x0[t];
    for (int k = 0; k < num_sb; ++k) {
      q6_k_sums<T>(p[k], xb, sum);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) xb[t] += sizeof(BlockQ8_K);
    }
  }
  static __m512 finish(__m512 sum, __m512) {
    return sum;
  }
};

// T tokens of one row tile over num_sb packed super-blocks; acc holds the
// running sums (zero before the first block).
template <class Kind, int T>
void run_tokens(const typename Kind::Packed* p, int num_sb, const uint8_t* const* x0, Accum* acc) {
  __m512 sum[T], min[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    sum[t] = acc[t].sum;
    min[t] = acc[t].min;
  }
  Kind::template run<T>(p, num_sb, x0, sum, min);
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    acc[t].sum = sum[t];
    acc[t].min = min[t];
  }
}

template <class Kind>
using RunFn = void (*)(const typename Kind::Packed*, int, const uint8_t* const*, Accum*);

template <class Kind, int... Ts>
constexpr auto make_run_table(std::integer_sequence<int, Ts...>) {
  return std::array<RunFn<Kind>, sizeof...(Ts)>{&run_tokens<Kind, Ts + 1>...};
}

// kTiled: w is a kTiled16 Q4_K weight (r0 a multiple of 16), unpacked
// super-block by super-block from its stream; otherwise kGguf, each row tile
// staged and packed.
template <class Kind, bool kTiled>
void matmul_kind(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t r0, int64_t r1) {
  using Packed = typename Kind::Packed;
  static constexpr auto kRun = make_run_table<Kind>(std::make_integer_sequence<int, kTokenTile>{});
  const int64_t nb = w.cols / kQK_K;
  thread_local std::vector<Packed> packed;
  thread_local std::vector<Accum> accs;
  thread_local std::vector<uint8_t> stage;
  if (packed.size() < static_cast<size_t>(kSbBlock)) packed.resize(kSbBlock);
  const int64_t chunk = std::max<int64_t>(
      kTokenTile, static_cast<int64_t>(kTokenChunkBytes / std::max<size_t>(1, x_row_bytes)) /
                      kTokenTile * kTokenTile);
  if (accs.size() < static_cast<size_t>(std::min(n, chunk))) accs.resize(std::min(n, chunk));
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const size_t tile_bytes = static_cast<size_t>(nb) * Kind::kTiledBlockBytes;
  const uint8_t* data_end =
      wd + static_cast<size_t>((w.rows + kRowTile - 1) / kRowTile) * tile_bytes;
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t t1 = std::min(n, t0 + chunk);
    for (int64_t r = r0; r < r1; r += kRowTile) {
      RowTile rt;
      const uint8_t* tile = nullptr;
      if constexpr (kTiled) {
        rt.num_rows = static_cast<int>(std::min<int64_t>(kRowTile, r1 - r));
        tile = wd + static_cast<size_t>(r / kRowTile) * tile_bytes;
      } else {
        rt = stage_row_tile(w, r, r1, &stage);
      }
      std::memset(static_cast<void*>(accs.data()), 0, sizeof(Accum) * (t1 - t0));
      for (int64_t b0 = 0; b0 < nb; b0 += kSbBlock) {
        const int num_sb = static_cast<int>(std::min<int64_t>(kSbBlock, nb - b0));
        for (int k = 0; k < num_sb; ++k) {
          if constexpr (kTiled) {
            const uint8_t* src = tile + static_cast<size_t>(b0 + k) * Kind::kTiledBlockBytes;
            // Stream kTiledPrefetchBytes ahead (into the next tile at the end).
            if (src + kTiledPrefetchBytes + Kind::kTiledBlockBytes <= data_end) {
              for (size_t o = 0; o < Kind::kTiledBlockBytes; o += 64) {
                _mm_prefetch(reinterpret_cast<const char*>(src + kTiledPrefetchBytes + o),
                             _MM_HINT_T0);
              }
            }
            Kind::unpack_tiled(src, &packed[k]);
          } else {
            Kind::pack(rt, b0 + k, &packed[k]);
          }
        }
        for (int64_t t = t0; t < t1; t += kTokenTile) {
          const int toks = static_cast<int>(std::min<int64_t>(kTokenTile, t1 - t));
          const uint8_t* x0[kTokenTile];
          for (int i = 0; i < toks; ++i) {
            x0[i] = x_enc + static_cast<size_t>(t + i) * x_row_bytes +
                    static_cast<size_t>(b0) * sizeof(BlockQ8_K);
          }
          kRun[toks - 1](packed.data(), num_sb, x0, accs.data() + (t - t0));
        }
      }
      const __mmask16 mask = static_cast<__mmask16>((1u << rt.num_rows) - 1);
      for (int64_t t = t0; t < t1; ++t) {
        const Accum& a = accs[t - t0];
        _mm512_mask_storeu_ps(y + t * w.rows + r, mask, Kind::finish(a.sum, a.min));
      }
    }
  }
}

// Row-wise kernels by token count, 1..kGemvMaxTokens.
using GemvFn = void (*)(const WeightView&, const uint8_t* const*, float* const*, int64_t, int64_t);

template <int... Ts>
constexpr std::array<GemvFn, sizeof...(Ts)> q4_k_gemv_table(std::integer_sequence<int, Ts...>) {
  return {&q4_k_gemv<Ts + 1>...};
}
template <int... Ts>
constexpr std::array<GemvFn, sizeof...(Ts)> q6_k_gemv_table(std::integer_sequence<int, Ts...>) {
  return {&q6_k_gemv<Ts + 1>...};
}

}  // namespace

bool matmul_supports(DType weight_type) {
  return weight_type == DType::kQ4_K || weight_type == DType::kQ6_K;
}

bool tiled_supports(DType weight_type) {
  return weight_type == DType::kQ4_K || weight_type == DType::kQ6_K;
}

namespace {

size_t tiled_block_bytes(DType weight_type) {
  return weight_type == DType::kQ4_K ? kQ4KTiledBlockBytes : kQ6KTiledBlockBytes;
}

// Super-block b of a row tile (rt over the GGUF rows) in the kTiled16 order.
void pack_tiled_q4_k(const RowTile& rt, int64_t b, uint8_t* out) {
  const size_t off = static_cast<size_t>(b) * sizeof(BlockQ4_K);
  __m512i h[4];
  load_transpose16x4(rt, off, h);
  for (int k = 0; k < 4; ++k) _mm512_store_si512(out + 64 * k, h[k]);
  for (int half = 0; half < 2; ++half) {
    __m512i r[16];
    for (int j = 0; j < kRowTile; ++j) {
      r[j] = _mm512_loadu_si512(rt.row[j] + off + offsetof(BlockQ4_K, qs) + 64 * half);
    }
    transpose16x16(r);
    for (int k = 0; k < 16; ++k) _mm512_store_si512(out + 64 * (4 + 16 * half + k), r[k]);
  }
}

void pack_tiled_q6_k(const RowTile& rt, int64_t b, uint8_t* out) {
  const size_t off = static_cast<size_t>(b) * sizeof(BlockQ6_K);
  __m512i sv[4];
  load_transpose16x4(rt, off + offsetof(BlockQ6_K, scales), sv);
  for (int k = 0; k < 4; ++k) _mm512_store_si512(out + 64 * (kQ6KTiledScales + k), sv[k]);
  __m512i r[16];
  for (int j = 0; j < kRowTile; ++j) {
    r[j] = _mm512_loadu_si512(rt.row[j] + off + offsetof(BlockQ6_K, qh));
  }
  transpose16x16(r);
  for (int k = 0; k < 16; ++k) _mm512_store_si512(out + 64 * (kQ6KTiledQh + k), r[k]);
  for (int h = 0; h < 2; ++h) {
    for (int j = 0; j < kRowTile; ++j) {
      r[j] = _mm512_loadu_si512(rt.row[j] + off + offsetof(BlockQ6_K, ql) + 64 * h);
    }
    transpose16x16(r);
    for (int k = 0; k < 16; ++k) {
      _mm512_store_si512(out + 64 * (kQ6KTiledQl + 16 * h + k), r[k]);
    }
  }
  _mm512_store_si512(out + 64 * kQ6KTiledD, _mm512_zextsi256_si512(load_q6_k_d(rt, off)));
}

}  // namespace

size_t tiled_bytes(DType weight_type, int64_t rows, int64_t cols) {
  return static_cast<size_t>((rows + kRowTile - 1) / kRowTile) * static_cast<size_t>(cols / kQK_K) *
         tiled_block_bytes(weight_type);
}

void pack_tiles(const WeightView& w, int64_t tile_begin, int64_t tile_end, void* dst) {
  const int64_t nb = w.cols / kQK_K;
  const size_t block_bytes = tiled_block_bytes(w.type);
  const size_t tile_bytes = static_cast<size_t>(nb) * block_bytes;
  const auto* wd = static_cast<const uint8_t*>(w.data);
  for (int64_t i = tile_begin; i < tile_end; ++i) {
    RowTile rt;
    const int64_t r0 = i * kRowTile;
    rt.num_rows = static_cast<int>(std::min<int64_t>(kRowTile, w.rows - r0));
    for (int j = 0; j < kRowTile; ++j) {
      rt.row[j] = wd + static_cast<size_t>(r0 + std::min(j, rt.num_rows - 1)) * w.row_bytes;
    }
    uint8_t* tp = static_cast<uint8_t*>(dst) + static_cast<size_t>(i) * tile_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* out = tp + static_cast<size_t>(b) * block_bytes;
      if (w.type == DType::kQ4_K) {
        pack_tiled_q4_k(rt, b, out);
      } else {
        pack_tiled_q6_k(rt, b, out);
      }
    }
  }
}

size_t activation_row_bytes(DType weight_type, int64_t cols) {
  return vec_dot::activation_row_bytes(weight_type, cols);
}

void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst) {
  avx2::encode_activation_row(weight_type, x, cols, dst);
}

void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end || n <= 0) return;
  if (w.type != DType::kQ4_K && w.type != DType::kQ6_K) return;
  const bool is_q4_k = w.type == DType::kQ4_K;
  if (w.layout == WeightLayout::kTiled16) {
    assert(row_begin % kRowTile == 0 && "kTiled16: rows start on a tile (split_rows)");
    if (n > (is_q4_k ? kTiledFusedMaxTokensQ4K : kTiledFusedMaxTokensQ6K)) {
      if (is_q4_k) {
        matmul_kind<KindQ4K, true>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      } else {
        matmul_kind<KindQ6K, true>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      }
      return;
    }
    static constexpr auto kQ4KRun =
        q4_k_tiled_table(std::make_integer_sequence<int, kFusedTokenTile>{});
    static constexpr auto kQ6KRun =
        q6_k_tiled_table(std::make_integer_sequence<int, kFusedTokenTile>{});
    const auto& kRun = is_q4_k ? kQ4KRun : kQ6KRun;
    const int64_t nb = w.cols / kQK_K;
    const size_t tile_bytes = static_cast<size_t>(nb) * tiled_block_bytes(w.type);
    const auto* wd = static_cast<const uint8_t*>(w.data);
    const uint8_t* data_end =
        wd + static_cast<size_t>((w.rows + kRowTile - 1) / kRowTile) * tile_bytes;
    for (int64_t r = row_begin; r < row_end; r += kRowTile) {
      const uint8_t* tile = wd + static_cast<size_t>(r / kRowTile) * tile_bytes;
      const __mmask16 mask =
          static_cast<__mmask16>((1u << std::min<int64_t>(kRowTile, row_end - r)) - 1);
      for (int64_t t = 0; t < n; t += kFusedTokenTile) {
        const int toks = static_cast<int>(std::min<int64_t>(kFusedTokenTile, n - t));
        const uint8_t* x0[kFusedTokenTile];
        for (int i = 0; i < toks; ++i) x0[i] = x_enc + static_cast<size_t>(t + i) * x_row_bytes;
        alignas(64) float out[kFusedTokenTile * kRowTile];
        kRun[toks - 1](tile, nb, data_end, x0, out);
        for (int i = 0; i < toks; ++i) {
          _mm512_mask_storeu_ps(y + (t + i) * w.rows + r, mask, _mm512_load_ps(out + kRowTile * i));
        }
      }
    }
    return;
  }
  if (n > kGemvMaxTokens) {
    if (is_q4_k) {
      matmul_kind<KindQ4K, false>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
    } else {
      matmul_kind<KindQ6K, false>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
    }
    return;
  }
  const uint8_t* x[kGemvMaxTokens];
  float* out[kGemvMaxTokens];
  for (int64_t t = 0; t < n; ++t) {
    x[t] = x_enc + static_cast<size_t>(t) * x_row_bytes;
    out[t] = y + t * w.rows;
  }
  static constexpr auto kQ4K = q4_k_gemv_table(std::make_integer_sequence<int, kGemvMaxTokens>{});
  static constexpr auto kQ6K = q6_k_gemv_table(std::make_integer_sequence<int, kGemvMaxTokens>{});
  (is_q4_k ? kQ4K : kQ6K)[n - 1](w, x, out, row_begin, row_end);
}

}  // namespace strata::avx512_kquant
