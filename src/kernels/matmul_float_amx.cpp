// AMX bf16 matmul (TDPBF16PS) for F16 and BF16 weights.
//
// The weights are the A operand: a 16-row tile's rows, converted per call
// into bf16 rows (F16: hi and lo parts, see the header), are A tiles of 16
// rows x 32 elements as they lie, so nothing is transposed. The
// activations are the B operand: per 16-token tile and 32-element chunk,
// row r holds the 16 tokens' element pair (2r, 2r + 1), laid out once per
// call (with zero tokens padding the last tile). C = 16 rows x 16 tokens
// accumulates a row's whole length in the tile (F16: the four exact
// products per chunk in a fixed order), then is stored and transposed into
// y. A token's sums never meet another token's, so its outputs are the same
// whatever n or its place in a tile.
#include "kernels/matmul_float_amx.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/amx_intrinsics.h"
#include "kernels/amx_tile_product.h"
#include "kernels/matmul_amx.h"
#include "util/thread_pool.h"

// GCC 12 reports the deliberately undefined upper lanes inside AVX-512
// intrinsics as uninitialized (as in matmul_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace strata::amx {
namespace {

constexpr int kTile = 16;  // weight rows per A tile, tokens per B tile
static_assert(kFloatRowShare == kTile, "threads get whole A tiles");
constexpr int64_t kChunk = 32;          // elements per tile row (64 bytes of bf16)
constexpr size_t kBBytes = kTile * 64;  // one B tile
constexpr long kCStride = kTile * sizeof(float);

inline void memory_barrier() {
  asm volatile("" ::: "memory");
}

// The top 16 bits of 32 fp32 values (a: elements 0..15, b: 16..31), in
// element order: their bf16 truncations, 16 dwords of element pairs.
inline __m512i top_halves(__m512i a, __m512i b) {
  const __m512i odd_words =
      _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27,
                       25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  return _mm512_permutex2var_epi16(a, odd_words, b);
}

// v = hi + lo exactly for an fp32 v with at most 16 significant bits (an
// fp16 or bf16 value): hi its top 8 significant bits, lo the rest.
inline void split(__m512 v, __m512i* hi, __m512i* lo) {
  const __m512i bits = _mm512_castps_si512(v);
  *hi = _mm512_and_si512(bits, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u)));
  *lo = _mm512_castps_si512(_mm512_sub_ps(v, _mm512_castsi512_ps(*hi)));
}

// Rows [r, r + 16) of w (those below row_end; the rest zero) as bf16 rows
// of `cols` elements: hi[j * cols + k], and lo for F16.
void stage_weights(const WeightView& w, int64_t r, int64_t row_end, uint16_t* hi, uint16_t* lo) {
  const int64_t valid = std::min<int64_t>(kTile, row_end - r);
  const size_t row_elems = static_cast<size_t>(w.cols);
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t j = 0; j < kTile; ++j) {
    uint16_t* h = hi + j * row_elems;
    if (j >= valid) {
      std::memset(h, 0, row_elems * sizeof(uint16_t));
      if (w.type == DType::kF16) std::memset(lo + j * row_elems, 0, row_elems * sizeof(uint16_t));
      continue;
    }
    const uint8_t* src = base + static_cast<size_t>(r + j) * w.row_bytes;
    if (w.type == DType::kBF16) {
      std::memcpy(h, src, row_elems * sizeof(uint16_t));
      continue;
    }
    uint16_t* l = lo + j * row_elems;
    for (int64_t c = 0; c < w.cols; c += kChunk) {
      const auto* p = reinterpret_cast<const __m256i*>(src + c * 2);
      __m512i h0, l0, h1, l1;
      split(_mm512_cvtph_ps(_mm256_loadu_si256(p)), &h0, &l0);
      split(_mm512_cvtph_ps(_mm256_loadu_si256(p + 1)), &h1, &l1);
      _mm512_storeu_si512(h + c, top_halves(h0, h1));
      _mm512_storeu_si512(l + c, top_halves(l0, l1));
    }
  }
}

// Tokens [0, n) in B-tile order, padded with zero tokens to whole tiles:
// token tile tt, chunk k at (tt * chunks + k) * kBBytes, row r = the 16
// tokens' pair (2r, 2r + 1) of the chunk. lo only for F16.
void stage_activations(bool f16, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, int64_t cols,
                       uint8_t* hi, uint8_t* lo) {
  const int64_t chunks = cols / kChunk;
  const int64_t tiles = (n + kTile - 1) / kTile;
  const size_t last_tile = static_cast<size_t>((tiles - 1) * chunks) * kBBytes;
  const size_t tile_bytes = static_cast<size_t>(chunks) * kBBytes;
  if (n % kTile != 0) {
    std::memset(hi + last_tile, 0, tile_bytes);
    if (f16) std::memset(lo + last_tile, 0, tile_bytes);
  }
  const __m512i rows =
      _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                         _mm512_set1_epi32(kTile));  // dword index of row r
  for (int64_t t = 0; t < n; ++t) {
    const auto* x = reinterpret_cast<const float*>(x_enc + static_cast<size_t>(t) * x_row_bytes);
    const size_t at = static_cast<size_t>(t / kTile * chunks) * kBBytes + (t % kTile) * 4;
    for (int64_t k = 0; k < chunks; ++k) {
      __m512i h0, l0, h1, l1;
      split(_mm512_loadu_ps(x + k * kChunk), &h0, &l0);
      split(_mm512_loadu_ps(x + k * kChunk + 16), &h1, &l1);
      const size_t o = at + static_cast<size_t>(k) * kBBytes;
      _mm512_i32scatter_epi32(hi + o, rows, top_halves(h0, h1), 4);
      if (f16) _mm512_i32scatter_epi32(lo + o, rows, top_halves(l0, l1), 4);
    }
  }
  memory_barrier();  // the stores must land before tileloadd reads them
}

struct StepArgs {
  const uint16_t* a_hi;  // the row tile's staged rows
  const uint16_t* a_lo;
  const uint8_t* b_hi;  // this step's first token tile, chunk 0
  const uint8_t* b_lo;
  int64_t chunks;
};

// C(tt) for TT token tiles over the whole row, stored to c.
template <bool F16, int TT>
__attribute__((noinline)) void step(const StepArgs& a, float* c) {
  const auto a_stride = static_cast<long>(a.chunks * kChunk * sizeof(uint16_t));
  const size_t tile_bytes = static_cast<size_t>(a.chunks) * kBBytes;
  _tile_zero(0);
  if constexpr (TT == 2) _tile_zero(1);
  for (int64_t k = 0; k < a.chunks; ++k) {
    const size_t bo = static_cast<size_t>(k) * kBBytes;
    _tile_loadd(4, a.a_hi + k * kChunk, a_stride);
    _tile_loadd(6, a.b_hi + bo, 64);
    if constexpr (TT == 2) _tile_loadd(2, a.b_hi + tile_bytes + bo, 64);
    if constexpr (F16) {
      _tile_loadd(5, a.a_lo + k * kChunk, a_stride);
      _tile_loadd(7, a.b_lo + bo, 64);
      if constexpr (TT == 2) _tile_loadd(3, a.b_lo + tile_bytes + bo, 64);
    }
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (F16) {
      _tile_dpbf16ps(0, 4, 7);
      _tile_dpbf16ps(0, 5, 6);
      _tile_dpbf16ps(0, 5, 7);
    }
    if constexpr (TT == 2) {
      _tile_dpbf16ps(1, 4, 2);
      if constexpr (F16) {
        _tile_dpbf16ps(1, 4, 3);
        _tile_dpbf16ps(1, 5, 2);
        _tile_dpbf16ps(1, 5, 3);
      }
    }
  }
  _tile_stored(0, c, kCStride);
  if constexpr (TT == 2) _tile_stored(1, c + kTile * kTile, kCStride);
}

}  // namespace

bool float_matmul_supports(const WeightView& w) {
  return w.layout == WeightLayout::kGguf && (w.type == DType::kF16 || w.type == DType::kBF16) &&
         w.cols > 0 && w.cols % kChunk == 0;
}

void float_matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                       float* y, int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end || n <= 0) return;
  use_tile_shape(TileShape::kK64);  // every tile 16 rows x 64 bytes
  const bool f16 = w.type == DType::kF16;
  const int64_t chunks = w.cols / kChunk;
  const int64_t tiles = (n + kTile - 1) / kTile;
  thread_local std::vector<uint8_t> bh_raw, bl_raw, ah_raw, al_raw;
  const size_t b_bytes = static_cast<size_t>(tiles * chunks) * kBBytes;
  uint8_t* b_hi = scratch<uint8_t>(bh_raw, b_bytes);
  uint8_t* b_lo = f16 ? scratch<uint8_t>(bl_raw, b_bytes) : nullptr;
  stage_activations(f16, x_enc, x_row_bytes, n, w.cols, b_hi, b_lo);
  const size_t a_elems = static_cast<size_t>(kTile) * w.cols;
  uint16_t* a_hi = scratch<uint16_t>(ah_raw, a_elems);
  uint16_t* a_lo = f16 ? scratch<uint16_t>(al_raw, a_elems) : nullptr;
  alignas(64) float c[2][kTile][kTile];
  StepArgs a{a_hi, a_lo, nullptr, nullptr, chunks};
  const size_t tile_bytes = static_cast<size_t>(chunks) * kBBytes;
  for (int64_t r = row_begin; r < row_end; r += kTile) {
    stage_weights(w, r, row_end, a_hi, a_lo);
    memory_barrier();
    const int64_t rows_here = std::min<int64_t>(kTile, row_end - r);
    for (int64_t tt = 0; tt < tiles; tt += 2) {
      const int pair = tiles - tt >= 2 ? 2 : 1;
      a.b_hi = b_hi + static_cast<size_t>(tt) * tile_bytes;
      a.b_lo = f16 ? b_lo + static_cast<size_t>(tt) * tile_bytes : nullptr;
      if (f16) {
        pair == 2 ? step<true, 2>(a, &c[0][0][0]) : step<true, 1>(a, &c[0][0][0]);
      } else {
        pair == 2 ? step<false, 2>(a, &c[0][0][0]) : step<false, 1>(a, &c[0][0][0]);
      }
      for (int p = 0; p < pair; ++p) {
        const int64_t t0 = (tt + p) * kTile;
        const int64_t toks = std::min<int64_t>(kTile, n - t0);
        for (int64_t m = 0; m < toks; ++m) {
          float* out = y + (t0 + m) * w.rows + r;
          for (int64_t j = 0; j < rows_here; ++j) out[j] = c[p][j][m];
        }
      }
    }
  }
}

}  // namespace strata::amx
