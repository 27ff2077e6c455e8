// AVX-512 VNNI int8 matmul for Q4_0 and Q8_0 weights, every n (decode GEMV,
// batched decode, prefill chunks and whole prompts).
//
// A thread walks its weight rows in tiles of 16. For each 32-element block,
// the 16 rows' quants are transposed in registers into eight vectors, one
// per 4-element group k, with row j's four quants in dword lane j, as
// unsigned bytes: Q8_0 quants q as q + 128 (XOR 0x80), Q4_0 nibbles n as
// they are. vpdpbusd(w_k, broadcast(x group k)) then adds the group's four
// products into lane j for row j, so eight instructions give each row's
// block dot with no horizontal reduction:
//   Q8_0: sum((q + 128) x) - 128 sum(x) = sum(q x)
//   Q4_0: sum(n x)         -   8 sum(x) = sum((n - 8) x)
// The correction needs only the activation block's quant sum, which the
// activation encoding carries (see encode_activation_row).
//
// Two weight layouts, one arithmetic:
//  - kTiled16 (what the model loader builds, see pack_tiles): the transposed
//    vectors and the 16 scales stored tile by tile, so a tile is one
//    sequential run the kernel loads as is, for any n. Tiles run in panels
//    (see matmul_tiled).
//  - kGguf: rows as the file stores them. With few tokens each block is
//    transposed and used at once; with more, a row tile is transposed once
//    into a thread-local scratch (the kTiled16 vectors) and then run against
//    every token, eight at a time.
//
// Rounding, identical for every n, tile and thread split: each block's
// integer dot is exact; per output, acc = fma((float)isum_block, d_w * d_x,
// acc) in block order from acc = 0. For Q4_0 that is also the AVX2 kernel's
// and vec_dot::dot_ref's order, bit for bit.
#include "kernels/matmul_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/matmul_avx2.h"
#include "kernels/quant.h"
#include "util/thread_pool.h"

// GCC 12 reports the deliberately undefined upper lanes inside several
// AVX-512 intrinsics (casts, gathers, narrowing conversions) as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace strata::avx512 {
namespace {

constexpr int kRowTile = static_cast<int>(kTiledRows);
constexpr int kGroups = kQK8_0 / 4;  // 4-byte groups per block
constexpr int kTokenTile = 8;        // tokens per register tile
// From this many tokens on, a row tile is transposed once into scratch.
constexpr int64_t kPackMinTokens = 2 * kTokenTile;
// The bytes of kTiled16 row tiles one token group runs against in turn.
constexpr size_t kPanelBytes = size_t{256} << 10;

// One transposed block of a 16-row tile: group k of row j in w[k] lane j.
struct TileBlock {
  __m512i w[kGroups];
  __m512 d;  // the 16 rows' weight scales
};

// The kTiled16 layout. Tile i (rows 16i..16i+15; rows past the weight's end
// are zero) is tiled_tile_bytes() at data + i * tiled_tile_bytes(): nb
// blocks of quant vectors, then nb blocks of 16 fp16 scales, then padding to
// 64 bytes. A Q8_0 block is its eight TileBlock vectors (512 bytes, already
// unsigned); a Q4_0 block is four vectors c[k], lane j = row j's quant bytes
// 4k..4k+3, whose low nibbles are group k and high nibbles group k + 4.
constexpr size_t kTiledQ8Bytes = kGroups * sizeof(__m512i);
constexpr size_t kTiledQ4Bytes = kGroups / 2 * sizeof(__m512i);
constexpr size_t kTiledScaleBytes = kRowTile * sizeof(uint16_t);

size_t tiled_quant_bytes(DType type) {
  return type == DType::kQ8_0 ? kTiledQ8Bytes : kTiledQ4Bytes;
}

size_t tiled_tile_bytes(DType type, int64_t cols) {
  const size_t nb = static_cast<size_t>(cols / kQK8_0);
  return (nb * (tiled_quant_bytes(type) + kTiledScaleBytes) + 63) / 64 * 64;
}

// One tile of a kTiled16 weight.
struct TiledTile {
  const uint8_t* quants;
  const uint8_t* scales;
};

// The activation encoding: nb Q8_0 blocks (the AVX2 kernel's values), then
// nb int32 per-block corrections -s * sum(quants) for the weight type's
// offset s (128 for Q8_0, 8 for Q4_0), then the nb block scales as fp32 (the
// fp16 d converted once, exactly: the inner loop broadcasts it straight from
// memory instead of converting it for every 16-row tile).
const BlockQ8_0* x_blocks(const uint8_t* x) {
  return reinterpret_cast<const BlockQ8_0*>(x);
}
// Block b's correction. The corrections follow 34-byte blocks, so they are
// not 4-byte aligned when nb is odd: read through memcpy (one unaligned load).
int32_t x_correction(const uint8_t* x, int64_t nb, int64_t b) {
  int32_t v;
  std::memcpy(&v, x + static_cast<size_t>(nb) * sizeof(BlockQ8_0) + static_cast<size_t>(b) * 4, 4);
  return v;
}
// Block b's scale d as fp32 (the same value as the block's fp16 d).
float x_scale(const uint8_t* x, int64_t nb, int64_t b) {
  float v;
  std::memcpy(
      &v, x + static_cast<size_t>(nb) * (sizeof(BlockQ8_0) + 4) + static_cast<size_t>(b) * 4, 4);
  return v;
}

// Where the 16 rows of a tile start; rows past the weight's end repeat its
// last row (their outputs are computed but never stored).
struct RowTile {
  const uint8_t* row[kRowTile];
  int num_rows;
};

RowTile make_row_tile(const WeightView& w, int64_t r0, int64_t r_end) {
  RowTile t;
  t.num_rows = static_cast<int>(std::min<int64_t>(kRowTile, r_end - r0));
  const auto* wd = static_cast<const uint8_t*>(w.data);
  for (int j = 0; j < kRowTile; ++j) {
    const int64_t r = r0 + std::min(j, t.num_rows - 1);
    t.row[j] = wd + static_cast<size_t>(r) * w.row_bytes;
  }
  return t;
}

// The 16 fp16 scales at byte offset `block_offset` of each row.
inline __m512 gather_scales(const RowTile& t, size_t block_offset) {
  // Sixteen 2-byte loads: cheaper than a 16-lane gather on current cores.
  uint16_t d[kRowTile];
#pragma GCC unroll 16
  for (int j = 0; j < kRowTile; ++j) std::memcpy(&d[j], t.row[j] + block_offset, sizeof(uint16_t));
  return _mm512_cvtph_ps(_mm256_setr_epi16(
      static_cast<int16_t>(d[0]), static_cast<int16_t>(d[1]), static_cast<int16_t>(d[2]),
      static_cast<int16_t>(d[3]), static_cast<int16_t>(d[4]), static_cast<int16_t>(d[5]),
      static_cast<int16_t>(d[6]), static_cast<int16_t>(d[7]), static_cast<int16_t>(d[8]),
      static_cast<int16_t>(d[9]), static_cast<int16_t>(d[10]), static_cast<int16_t>(d[11]),
      static_cast<int16_t>(d[12]), static_cast<int16_t>(d[13]), static_cast<int16_t>(d[14]),
      static_cast<int16_t>(d[15])));
}

// Concatenates 256-bit halves of 64 bytes: [lo | hi].
inline __m512i load_2x256(const void* lo, const void* hi) {
  return _mm512_inserti64x4(
      _mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(lo))),
      _mm256_loadu_si256(static_cast<const __m256i*>(hi)), 1);
}

__attribute__((always_inline)) inline void load_q8_0_block(const RowTile& t, int64_t b,
                                                           TileBlock* out) {
  const size_t off = static_cast<size_t>(b) * sizeof(BlockQ8_0);
  const size_t qs = off + offsetof(BlockQ8_0, qs);
  // z[i]: row i's 8 groups in the low half, row i + 8's in the high half.
  __m512i z[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) z[i] = load_2x256(t.row[i] + qs, t.row[i + 8] + qs);
  // 8x8 dword transpose inside each 256-bit half.
  __m512i s[8], u[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; i += 2) {
    s[i] = _mm512_unpacklo_epi32(z[i], z[i + 1]);
    s[i + 1] = _mm512_unpackhi_epi32(z[i], z[i + 1]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; i += 4) {
    u[i + 0] = _mm512_unpacklo_epi64(s[i], s[i + 2]);      // groups 0 | 4
    u[i + 1] = _mm512_unpackhi_epi64(s[i], s[i + 2]);      // groups 1 | 5
    u[i + 2] = _mm512_unpacklo_epi64(s[i + 1], s[i + 3]);  // groups 2 | 6
    u[i + 3] = _mm512_unpackhi_epi64(s[i + 1], s[i + 3]);  // groups 3 | 7
  }
  // u[g] (rows 0-3 / 8-11) and u[g + 4] (rows 4-7 / 12-15): 128-bit lanes
  // [group g | group g+4 | group g (rows+8) | group g+4 (rows+8)].
  const __m512i lo_idx = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i hi_idx = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 8
  for (int g = 0; g < 4; ++g) {
    out->w[g] = _mm512_xor_si512(_mm512_permutex2var_epi64(u[g], lo_idx, u[g + 4]), flip);
    out->w[g + 4] = _mm512_xor_si512(_mm512_permutex2var_epi64(u[g], hi_idx, u[g + 4]), flip);
  }
  out->d = gather_scales(t, off);
}

__attribute__((always_inline)) inline void load_q4_0_block(const RowTile& t, int64_t b,
                                                           TileBlock* out) {
  const size_t off = static_cast<size_t>(b) * sizeof(BlockQ4_0);
  const size_t qs = off + offsetof(BlockQ4_0, qs);
  // z[i]: 128-bit lane L holds row 4L + i's 16 nibble bytes.
  __m512i z[4];
#pragma GCC unroll 8
  for (int i = 0; i < 4; ++i) {
    __m512i v =
        _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t.row[i] + qs)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.row[4 + i] + qs)),
                           1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.row[8 + i] + qs)),
                           2);
    z[i] = _mm512_inserti32x4(
        v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(t.row[12 + i] + qs)), 3);
  }
  // 4x4 dword transpose per lane: c[k] lane 4L + i = row 4L + i's bytes 4k..4k+3.
  const __m512i s0 = _mm512_unpacklo_epi32(z[0], z[1]);
  const __m512i s1 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i s2 = _mm512_unpacklo_epi32(z[2], z[3]);
  const __m512i s3 = _mm512_unpackhi_epi32(z[2], z[3]);
  const __m512i c[4] = {_mm512_unpacklo_epi64(s0, s2), _mm512_unpackhi_epi64(s0, s2),
                        _mm512_unpacklo_epi64(s1, s3), _mm512_unpackhi_epi64(s1, s3)};
  // Low nibbles of bytes 4k.. are elements 4k.. (group k); high nibbles are
  // elements 16 + 4k.. (group k + 4).
  const __m512i low4 = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 8
  for (int k = 0; k < 4; ++k) {
    out->w[k] = _mm512_and_si512(c[k], low4);
    out->w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(c[k], 4), low4);
  }
  out->d = gather_scales(t, off);
}

struct LoadQ8_0 {
  __attribute__((always_inline)) void operator()(const RowTile& t, int64_t b,
                                                 TileBlock* out) const {
    load_q8_0_block(t, b, out);
  }
};
struct LoadQ4_0 {
  __attribute__((always_inline)) void operator()(const RowTile& t, int64_t b,
                                                 TileBlock* out) const {
    load_q4_0_block(t, b, out);
  }
};

struct LoadTiledQ8_0 {
  __attribute__((always_inline)) void operator()(const TiledTile& t, int64_t b,
                                                 TileBlock* out) const {
    const uint8_t* q = t.quants + static_cast<size_t>(b) * kTiledQ8Bytes;
#pragma GCC unroll 8
    for (int k = 0; k < kGroups; ++k) out->w[k] = _mm512_load_si512(q + k * sizeof(__m512i));
    out->d = _mm512_cvtph_ps(
        _mm256_load_si256(reinterpret_cast<const __m256i*>(t.scales + b * kTiledScaleBytes)));
  }
};
struct LoadTiledQ4_0 {
  __attribute__((always_inline)) void operator()(const TiledTile& t, int64_t b,
                                                 TileBlock* out) const {
    const uint8_t* q = t.quants + static_cast<size_t>(b) * kTiledQ4Bytes;
    const __m512i low4 = _mm512_set1_epi8(0x0F);
#pragma GCC unroll 4
    for (int k = 0; k < kGroups / 2; ++k) {
      const __m512i c = _mm512_load_si512(q + k * sizeof(__m512i));
      out->w[k] = _mm512_and_si512(c, low4);
      out->w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(c, 4), low4);
    }
    out->d = _mm512_cvtph_ps(
        _mm256_load_si256(reinterpret_cast<const __m256i*>(t.scales + b * kTiledScaleBytes)));
  }
};

inline __m512i broadcast_group(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// acc[t] += block b of T tokens against one transposed block.
//
// Group k outer, tokens inner: the T integer sums are T independent
// vpdpbusd chains side by side in program order, so the core overlaps
// them (token by token, each 8-deep chain of 5-cycle latencies had to be
// found past the previous token's whole chain, and the scheduler filled up
// first: 43% of the unit's peak in L1, against 61% this way). The sums
// and the fp32 order per output are the same either way.
template <int T>
inline void accumulate_block(const TileBlock& wb, const uint8_t* const* x, int64_t nb, int64_t b,
                             __m512* acc) {
  __m512i isum[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) isum[t] = _mm512_set1_epi32(x_correction(x[t], nb, b));
#pragma GCC unroll 8
  for (int k = 0; k < kGroups; ++k) {
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      isum[t] =
          _mm512_dpbusd_epi32(isum[t], wb.w[k], broadcast_group(x_blocks(x[t])[b].qs + 4 * k));
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    const __m512 scale = _mm512_mul_ps(wb.d, _mm512_set1_ps(x_scale(x[t], nb, b)));
    acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), scale, acc[t]);
  }
}

template <int T>
inline void store_tile(const __m512* acc, float* out, int64_t out_stride, __mmask16 mask) {
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(out + t * out_stride, mask, acc[t]);
}

// Rows are contiguous, so a 16-row tile is one contiguous run of bytes.
// While a tile is read, the next tile's run is prefetched into L2, spread
// evenly over the tile's blocks: sixteen row streams per thread are more
// than the hardware prefetchers follow from DRAM.
struct TilePrefetch {
  const char* next = nullptr;  // start of the next tile's bytes
  size_t bytes_per_block = 0;  // of them, to prefetch per block

  TilePrefetch(const WeightView& w, int64_t r, int64_t r_end, int64_t nb) {
    const int64_t next_rows = std::min<int64_t>(kRowTile, r_end - (r + kRowTile));
    if (next_rows <= 0) return;
    next = static_cast<const char*>(w.data) + static_cast<size_t>(r + kRowTile) * w.row_bytes;
    const size_t total = static_cast<size_t>(next_rows) * w.row_bytes;
    bytes_per_block = (total + static_cast<size_t>(nb) - 1) / static_cast<size_t>(nb);
  }
  void operator()(int64_t b) const {
    if (next == nullptr) return;
    const char* p = next + static_cast<size_t>(b) * bytes_per_block;
    for (size_t o = 0; o < bytes_per_block; o += 64) _mm_prefetch(p + o, _MM_HINT_T1);
  }
};

// T tokens, blocks transposed on the fly.
// How many blocks ahead each row of the tile being read is fetched into L1.
constexpr int64_t kL1AheadBlocks = 2;

// This tile's rows a few blocks ahead into L1 (every other block): sixteen
// L1 misses per block would otherwise wait on L2 one after another.
inline void prefetch_rows_ahead(const RowTile& rt, int64_t b, size_t block_bytes) {
  if ((b & 1) != 0) return;
#pragma GCC unroll 16
  for (int j = 0; j < kRowTile; ++j) {
    _mm_prefetch(reinterpret_cast<const char*>(rt.row[j]) + (b + kL1AheadBlocks) * block_bytes,
                 _MM_HINT_T0);
  }
}

// T tokens against one tile, each block loaded (and, from the kGguf layout,
// transposed) as it is used; prefetch(b) runs before block b is loaded.
template <int T, class Tile, class LoadFn, class PrefetchFn>
__attribute__((flatten)) void direct_tile(const Tile& tile, int64_t nb, const uint8_t* const* x,
                                          float* out, int64_t out_stride, __mmask16 mask,
                                          LoadFn load, PrefetchFn prefetch) {
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    prefetch(b);
    TileBlock wb;
    load(tile, b, &wb);
    accumulate_block<T>(wb, x, nb, b, acc);
  }
  store_tile<T>(acc, out, out_stride, mask);
}

// T tokens against a tile transposed into scratch.
template <int T>
__attribute__((flatten)) void packed_tile(const TileBlock* packed, int64_t nb,
                                          const uint8_t* const* x, float* out, int64_t out_stride,
                                          __mmask16 mask) {
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) accumulate_block<T>(packed[b], x, nb, b, acc);
  store_tile<T>(acc, out, out_stride, mask);
}

// Calls fn(integral_constant<int, T>) for toks in [1, kTokenTile].
template <class Fn>
inline void with_tokens(int toks, Fn&& fn) {
  switch (toks) {
    case 1:
      fn(std::integral_constant<int, 1>{});
      break;
    case 2:
      fn(std::integral_constant<int, 2>{});
      break;
    case 3:
      fn(std::integral_constant<int, 3>{});
      break;
    case 4:
      fn(std::integral_constant<int, 4>{});
      break;
    case 5:
      fn(std::integral_constant<int, 5>{});
      break;
    case 6:
      fn(std::integral_constant<int, 6>{});
      break;
    case 7:
      fn(std::integral_constant<int, 7>{});
      break;
    default:
      fn(std::integral_constant<int, 8>{});
      break;
  }
}

// For each group of up to kTokenTile tokens t.. of the n activation rows:
// fn(integral_constant<int, T>, their row pointers, y + t * out_stride, t).
template <class Fn>
inline void for_token_groups(const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                             int64_t out_stride, Fn&& fn) {
  for (int64_t t = 0; t < n; t += kTokenTile) {
    const int toks = static_cast<int>(std::min<int64_t>(kTokenTile, n - t));
    const uint8_t* xr[kTokenTile];
    for (int i = 0; i < toks; ++i) xr[i] = x_enc + static_cast<size_t>(t + i) * x_row_bytes;
    const uint8_t* const* rows = xr;
    with_tokens(toks, [&](auto tc) { fn(tc, rows, y + t * out_stride, t); });
  }
}

// A thread-local, 64-byte aligned array of nb tile blocks, reused across
// calls (no allocation after warm-up).
TileBlock* tile_scratch(int64_t nb) {
  thread_local std::vector<uint8_t> raw;
  const size_t bytes = static_cast<size_t>(nb) * sizeof(TileBlock) + 64;
  if (raw.size() < bytes) raw.resize(bytes);
  const auto addr = reinterpret_cast<uintptr_t>(raw.data());
  return reinterpret_cast<TileBlock*>(raw.data() + ((64 - addr % 64) % 64));
}

template <size_t kBlockBytes, class LoadFn>
void matmul_tiles(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                  float* y, int64_t r0, int64_t r1, LoadFn load) {
  const int64_t nb = w.cols / kQK8_0;
  const bool pack = n >= kPackMinTokens;
  TileBlock* packed = pack ? tile_scratch(nb) : nullptr;
  for (int64_t r = r0; r < r1; r += kRowTile) {
    const RowTile rt = make_row_tile(w, r, r1);
    const auto mask = static_cast<__mmask16>((1u << rt.num_rows) - 1u);
    const TilePrefetch prefetch(w, r, r1, nb);
    if (pack) {
      for (int64_t b = 0; b < nb; ++b) {
        prefetch(b);
        prefetch_rows_ahead(rt, b, kBlockBytes);
        load(rt, b, &packed[b]);
      }
    }
    for_token_groups(x_enc, x_row_bytes, n, y + r, w.rows,
                     [&](auto tc, auto xr, float* out, int64_t) {
                       constexpr int T = decltype(tc)::value;
                       if (pack) {
                         packed_tile<T>(packed, nb, xr, out, w.rows, mask);
                       } else {
                         direct_tile<T>(rt, nb, xr, out, w.rows, mask, load, [&](int64_t b) {
                           prefetch(b);
                           prefetch_rows_ahead(rt, b, kBlockBytes);
                         });
                       }
                     });
  }
}

// Rows [r0, r1) of a kTiled16 weight (r0 on a tile boundary), a panel of
// row tiles at a time: each token group runs against every tile of the
// panel before the next group, so the activations are read once per panel
// (from L1; L2 for rows as wide as 5632) instead of once per tile (from L3
// once n tokens outgrow L2), while the panel's tiles stay in L2. The first token group streams each
// tile from memory while the next tile is prefetched into L2.
template <class LoadFn>
void matmul_tiled(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                  float* y, int64_t r0, int64_t r1, LoadFn load) {
  const int64_t nb = w.cols / kQK8_0;
  const size_t tile_bytes = tiled_tile_bytes(w.type, w.cols);
  const size_t quant_bytes = static_cast<size_t>(nb) * tiled_quant_bytes(w.type);
  const size_t prefetch_per_block = (tile_bytes + static_cast<size_t>(nb) - 1) / nb;
  const auto* base = static_cast<const uint8_t*>(w.data);
  const int64_t panel_rows =
      kRowTile * std::max<int64_t>(1, static_cast<int64_t>(kPanelBytes / tile_bytes));
  for (int64_t p = r0; p < r1; p += panel_rows) {
    const int64_t p_end = std::min(r1, p + panel_rows);
    for_token_groups(
        x_enc, x_row_bytes, n, y, w.rows, [&](auto tc, auto xr, float* out_t, int64_t t) {
          constexpr int T = decltype(tc)::value;
          for (int64_t r = p; r < p_end; r += kRowTile) {
            const uint8_t* tp = base + static_cast<size_t>(r / kRowTile) * tile_bytes;
            const TiledTile tile{tp, tp + quant_bytes};
            const auto mask =
                static_cast<__mmask16>((1u << std::min<int64_t>(kRowTile, r1 - r)) - 1u);
            const char* next = t == 0 && r + kRowTile < r1
                                   ? reinterpret_cast<const char*>(tp + tile_bytes)
                                   : nullptr;
            const auto prefetch_next = [&](int64_t b) {
              const char* q = next + static_cast<size_t>(b) * prefetch_per_block;
              for (size_t o = 0; o < prefetch_per_block; o += 64) _mm_prefetch(q + o, _MM_HINT_T1);
            };
            const auto no_prefetch = [](int64_t) {};
            if (next != nullptr) {
              direct_tile<T>(tile, nb, xr, out_t + r, w.rows, mask, load, prefetch_next);
            } else {
              direct_tile<T>(tile, nb, xr, out_t + r, w.rows, mask, load, no_prefetch);
            }
          }
        });
  }
}

}  // namespace

size_t tiled_bytes(DType weight_type, int64_t rows, int64_t cols) {
  return static_cast<size_t>((rows + kRowTile - 1) / kRowTile) *
         tiled_tile_bytes(weight_type, cols);
}

void pack_tiles(const WeightView& w, int64_t tile_begin, int64_t tile_end, void* dst) {
  const int64_t nb = w.cols / kQK8_0;
  const size_t tile_bytes = tiled_tile_bytes(w.type, w.cols);
  const size_t qbytes = tiled_quant_bytes(w.type);
  const bool is_q8 = w.type == DType::kQ8_0;
  const size_t block_bytes = is_q8 ? sizeof(BlockQ8_0) : sizeof(BlockQ4_0);
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t i = tile_begin; i < tile_end; ++i) {
    uint8_t* tp = static_cast<uint8_t*>(dst) + static_cast<size_t>(i) * tile_bytes;
    uint8_t* quants = tp;
    uint8_t* scales = tp + static_cast<size_t>(nb) * qbytes;
    // Rows past the end: quants that decode to 0 with scale 0; padding 0.
    std::memset(tp, is_q8 ? 0x80 : 0x88, static_cast<size_t>(nb) * qbytes);
    std::memset(scales, 0, tile_bytes - static_cast<size_t>(nb) * qbytes);
    for (int j = 0; j < kRowTile; ++j) {
      const int64_t r = i * kRowTile + j;
      if (r >= w.rows) break;
      const uint8_t* row = src + static_cast<size_t>(r) * w.row_bytes;
      for (int64_t b = 0; b < nb; ++b) {
        const uint8_t* blk = row + static_cast<size_t>(b) * block_bytes;
        static_assert(offsetof(BlockQ8_0, qs) == 2 && offsetof(BlockQ4_0, qs) == 2);
        std::memcpy(scales + static_cast<size_t>(b) * kTiledScaleBytes + 2 * j, blk, 2);
        const uint8_t* qs = blk + 2;
        uint8_t* qb = quants + static_cast<size_t>(b) * qbytes;
        const int num_groups = is_q8 ? kGroups : kGroups / 2;
        for (int k = 0; k < num_groups; ++k) {
          for (int e = 0; e < 4; ++e) {
            const uint8_t v = qs[4 * k + e];
            qb[k * sizeof(__m512i) + 4 * j + e] = is_q8 ? static_cast<uint8_t>(v ^ 0x80u) : v;
          }
        }
      }
    }
  }
}

size_t tiled_quant_block_bytes(DType weight_type) {
  return tiled_quant_bytes(weight_type);
}

bool matmul_supports(DType weight_type) {
  return weight_type == DType::kQ4_0 || weight_type == DType::kQ8_0;
}

size_t activation_row_bytes(DType weight_type, int64_t cols) {
  const int64_t nb = cols / kQK8_0;
  return avx2::activation_row_bytes(weight_type, cols) +
         static_cast<size_t>(nb) * (sizeof(int32_t) + sizeof(float));
}

void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst) {
  avx2::encode_activation_row(weight_type, x, cols, dst);
  const int64_t nb = cols / kQK8_0;
  const auto* blocks = static_cast<const BlockQ8_0*>(dst);
  auto* corr = reinterpret_cast<uint8_t*>(dst) + static_cast<size_t>(nb) * sizeof(BlockQ8_0);
  const int32_t offset = weight_type == DType::kQ8_0 ? 128 : 8;
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < nb; ++b) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[b].qs));
    // sum of 32 signed bytes: maddubs(1, q) pairs them into int16, madd into int32.
    const __m256i s32 = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16);
    const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
    const __m128i h2 = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
    const int32_t sum = _mm_cvtsi128_si32(_mm_add_epi32(h2, _mm_shuffle_epi32(h2, 0xB1)));
    const int32_t c = -offset * sum;
    std::memcpy(corr + static_cast<size_t>(b) * sizeof(int32_t), &c, sizeof(c));
    const float d = _cvtsh_ss(blocks[b].d);
    std::memcpy(corr + static_cast<size_t>(nb + b) * sizeof(int32_t), &d, sizeof(d));
  }
}

void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;
  if (w.layout == WeightLayout::kTiled16) {
    if (w.type == DType::kQ4_0) {
      matmul_tiled(w, x_enc, x_row_bytes, n, y, row_begin, row_end, LoadTiledQ4_0{});
    } else {
      matmul_tiled(w, x_enc, x_row_bytes, n, y, row_begin, row_end, LoadTiledQ8_0{});
    }
    return;
  }
  if (w.type == DType::kQ4_0) {
    matmul_tiles<sizeof(BlockQ4_0)>(w, x_enc, x_row_bytes, n, y, row_begin, row_end, LoadQ4_0{});
  } else if (w.type == DType::kQ8_0) {
    matmul_tiles<sizeof(BlockQ8_0)>(w, x_enc, x_row_bytes, n, y, row_begin, row_end, LoadQ8_0{});
  }
}

}  // namespace strata::avx512
