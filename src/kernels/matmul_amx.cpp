// AMX int8 matmul for Q4_0 and Q8_0 weights in the kTiled16 layout.
//
// The kTiled16 layout already stores each block of a 16-row tile the way
// the tile unit's second operand wants it: row k (64 bytes) holds the 16
// weight rows' group k (4 bytes each). So a block is one B tile of 8 rows x
// 64 bytes. Once per weight tile (and reused by every token tile), its
// quants are made signed into scratch: Q8_0's stored q + 128 back to q,
// Q4_0's nibble pairs split into rows of n - 8. The activation quants are
// laid out once per call in A-tile order (16 tokens x 32 bytes per block).
// TDPBSSD then gives, for token m and row j, the exact block dot sum(q x):
// the same integer the VNNI kernel reaches as sum((q + 128) x) - 128 sum(x)
// (or sum(n x) - 8 sum(x)), without the correction.
//
// One tile instruction per block, because each 32-element block has its
// own scales: the int32 result is stored and, per token, converted and
// accumulated with acc = fma((float)isum, d_w * d_x, acc) in block order
// from 0, the VNNI kernel's order, so outputs are bit-identical to it
// (the integer dot is exact in both; the fp32 operations and their order
// are the same).
//
// Tiles: a step is up to 32 tokens x 32 rows: A0/A1 (tmm4/5, 16 tokens x
// 32 bytes each), B0/B1 (tmm6/7, 8 x 64 bytes, 16 rows each) and their four
// products C (tmm0-3, 16x16 int32), four independent tile chains. The
// results of block b are scaled while the tile unit computes block b + 1
// (tilestored does not forward to loads: its data has to reach L1 first).
// The fp32 accumulators (32 x 32) live in an L1 buffer.
#include "kernels/matmul_amx.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/amx_intrinsics.h"
#include "kernels/amx_tile_product.h"
#include "kernels/matmul_avx512.h"
#include "kernels/quant.h"

// GCC 12 reports the deliberately undefined upper lanes inside AVX-512
// intrinsics as uninitialized (as in matmul_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace strata::amx {
namespace {

constexpr int kTileTokens = 16;
constexpr int kTileRows = static_cast<int>(avx512::kTiledRows);
constexpr int kGroups = kQK8_0 / 4;  // B tile rows per block
constexpr size_t kBRowBytes = 64;    // 16 weight rows x 4 bytes
constexpr size_t kBBytes = kGroups * kBRowBytes;
constexpr size_t kScaleBytes = kTileRows * sizeof(uint16_t);

// The palette-1 configuration as ldtilecfg reads it (64 bytes).
struct alignas(64) TileConfig {
  uint8_t palette = 0;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile i
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// tmm0-3: C, 16 tokens x 16 int32; tmm4-5: A, 16 tokens x k_bytes
// activation quants; tmm6-7: B, k_bytes / 4 groups x 16 rows x 4 bytes.
TileConfig make_config(TileShape shape) {
  const int k_bytes = shape == TileShape::kK64 ? 64 : kQK8_0;
  TileConfig c;
  c.palette = 1;
  for (int i : {0, 1, 2, 3}) {
    c.rows[i] = kTileTokens;
    c.colsb[i] = kTileRows * sizeof(int32_t);
  }
  for (int i : {4, 5}) {
    c.rows[i] = kTileTokens;
    c.colsb[i] = static_cast<uint16_t>(k_bytes);
  }
  for (int i : {6, 7}) {
    c.rows[i] = static_cast<uint8_t>(k_bytes / 4);
    c.colsb[i] = kBRowBytes;
  }
  return c;
}

// The shape this thread's tile configuration holds (-1: none yet).
thread_local int t_shape = -1;

// Compiler barrier: GCC's tile intrinsics are asm statements that declare
// no (or too small a) memory input, so without it stores that feed them
// (the configuration, the Q4_0 scratch) may be dropped or sunk past them.
inline void memory_barrier() {
  asm volatile("" ::: "memory");
}

void ensure_configured() {
  use_tile_shape(TileShape::kK32);
}

constexpr int kCInts = kTileTokens * kTileRows;  // one C tile's int32 results
static_assert(kCInts == 16 * 16, "dpbssd_and_store (amx_tile_product.h) stores 16 x 16 C tiles");
constexpr size_t kABytes = kTileTokens * kQK8_0;  // one A tile: 16 tokens' block quants

// One step's operands: TT token tiles (16 tokens each) x WT weight tiles.
struct StepArgs {
  const uint8_t* wq[2];      // the weight tiles' B rows of block 0, kBBytes per block
  const uint8_t* scales[2];  // their fp16 scales of block 0, kScaleBytes per block
  const uint8_t* xq;         // A tiles: token tile tt, block b at xq + (tt * nb + b) * kABytes
  int64_t nb;
  const float* dx;  // token m, block b: dx[m * nb + b] (fp32 activation scale)
};

// The tile work of block b: C[2 tt + h] = A[tt] x B[h], stored to c.
template <int TT, int WT>
__attribute__((always_inline)) inline void issue_block(const StepArgs& a, int64_t b, int32_t* c) {
  const size_t xo = static_cast<size_t>(b) * kABytes;
  const size_t wo = static_cast<size_t>(b) * kBBytes;
  _tile_loadd(4, a.xq + xo, kQK8_0);
  if constexpr (TT == 2) _tile_loadd(5, a.xq + static_cast<size_t>(a.nb) * kABytes + xo, kQK8_0);
  _tile_loadd(6, a.wq[0] + wo, kBRowBytes);
  if constexpr (WT == 2) _tile_loadd(7, a.wq[1] + wo, kBRowBytes);
  dpbssd_and_store<TT, WT>(c);
}

// acc[m][h] += block b's results in c, the VNNI kernel's arithmetic:
// acc = fma((float)isum, d_w * d_x, acc).
template <int TT, int WT>
__attribute__((always_inline)) inline void scale_block(const StepArgs& a, int64_t b,
                                                       const int32_t* c, __m512 (*acc)[2]) {
  __m512 dw[WT];
#pragma GCC unroll 2
  for (int h = 0; h < WT; ++h) {
    dw[h] = _mm512_cvtph_ps(
        _mm256_load_si256(reinterpret_cast<const __m256i*>(a.scales[h] + b * kScaleBytes)));
  }
#pragma GCC unroll 2
  for (int tt = 0; tt < TT; ++tt) {
#pragma GCC unroll 16
    for (int m = 0; m < kTileTokens; ++m) {
      const int64_t token = tt * kTileTokens + m;
      const __m512 dx = _mm512_set1_ps(a.dx[token * a.nb + b]);
#pragma GCC unroll 2
      for (int h = 0; h < WT; ++h) {
        const __m512i isum = _mm512_load_si512(c + (2 * tt + h) * kCInts + m * kTileRows);
        acc[token][h] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw[h], dx), acc[token][h]);
      }
    }
  }
}

// Outputs of TT * 16 tokens x WT * 16 rows: out[m * out_stride + 16 h + j].
template <int TT, int WT>
__attribute__((noinline)) void step(const StepArgs& a, float* out, int64_t out_stride,
                                    const __mmask16* mask) {
  alignas(64) __m512 acc[2 * kTileTokens][2];
  for (int m = 0; m < TT * kTileTokens; ++m) {
    for (int h = 0; h < WT; ++h) acc[m][h] = _mm512_setzero_ps();
  }
  alignas(64) int32_t c[2][4 * kCInts];
  issue_block<TT, WT>(a, 0, c[0]);
  for (int64_t b = 0; b < a.nb; ++b) {
    if (b + 1 < a.nb) issue_block<TT, WT>(a, b + 1, c[(b + 1) & 1]);
    scale_block<TT, WT>(a, b, c[b & 1], acc);
  }
  for (int m = 0; m < TT * kTileTokens; ++m) {
    for (int h = 0; h < WT; ++h) {
      _mm512_mask_storeu_ps(out + m * out_stride + h * kTileRows, mask[h], acc[m][h]);
    }
  }
}

// A kTiled16 tile's quants as signed B rows: Q8_0 rows with the +128
// offset removed; Q4_0 nibble rows split (row k = low nibbles of packed row
// k, row k + 4 = its high nibbles) and offset by -8.
void signed_b_rows(DType type, const uint8_t* quants, int64_t nb, uint8_t* dst) {
  if (type == DType::kQ8_0) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (size_t i = 0; i < static_cast<size_t>(nb) * kBBytes; i += kBRowBytes) {
      _mm512_store_si512(dst + i, _mm512_xor_si512(_mm512_load_si512(quants + i), flip));
    }
  } else {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i eight = _mm512_set1_epi8(8);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* q = quants + static_cast<size_t>(b) * (kBBytes / 2);
      uint8_t* d = dst + static_cast<size_t>(b) * kBBytes;
#pragma GCC unroll 4
      for (int k = 0; k < kGroups / 2; ++k) {
        const __m512i v = _mm512_load_si512(q + k * kBRowBytes);
        _mm512_store_si512(d + k * kBRowBytes, _mm512_sub_epi8(_mm512_and_si512(v, low4), eight));
        _mm512_store_si512(d + (k + kGroups / 2) * kBRowBytes,
                           _mm512_sub_epi8(_mm512_and_si512(_mm512_srli_epi16(v, 4), low4), eight));
      }
    }
  }
  memory_barrier();  // the stores must land before tileloadd reads them
}

}  // namespace

bool matmul_supports(const WeightView& w) {
  return w.layout == WeightLayout::kTiled16 && (w.type == DType::kQ8_0 || w.type == DType::kQ4_0);
}

bool configure_thread_tiles(TileShape shape) {
  TileConfig cfg = make_config(shape);
  // GCC 12's _tile_loadconfig declares it reads 8 bytes of cfg, so without
  // this barrier the stores of the other 56 are dead to it and dropped.
  asm volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
  alignas(64) uint8_t back[sizeof(TileConfig)];
  std::memset(back, 0xA5, sizeof(back));
  asm volatile("" : : "r"(back) : "memory");
  _tile_storeconfig(back);
  asm volatile("" : : "r"(back) : "memory");
  t_shape = static_cast<int>(shape);
  return std::memcmp(&cfg, back, sizeof(cfg)) == 0;
}

void use_tile_shape(TileShape shape) {
  if (t_shape != static_cast<int>(shape)) configure_thread_tiles(shape);
}

int tile_dot_loop(int64_t iters) {
  ensure_configured();
  alignas(64) int8_t a[kTileTokens * kQK8_0];
  alignas(64) int8_t b[kBBytes];
  std::memset(a, 1, sizeof(a));
  std::memset(b, 1, sizeof(b));
  memory_barrier();
  _tile_loadd(4, a, kQK8_0);
  _tile_loadd(5, a, kQK8_0);
  _tile_loadd(6, b, kBRowBytes);
  _tile_loadd(7, b, kBRowBytes);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  alignas(64) int32_t c[kCInts];
  _tile_stored(0, c, kTileRows * sizeof(int32_t));
  return c[0];
}

void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end || n <= 0) return;
  const int64_t n_tiles = n / kTileTokens;
  const int64_t n_amx = n_tiles * kTileTokens;
  if (n_amx < n) {
    avx512::matmul_rows(w, x_enc + static_cast<size_t>(n_amx) * x_row_bytes, x_row_bytes, n - n_amx,
                        y + n_amx * w.rows, row_begin, row_end);
  }
  if (n_tiles == 0) return;
  ensure_configured();
  const int64_t nb = w.cols / kQK8_0;
  // Per token and block: the activation scale as fp32, gathered once so
  // the inner loop broadcasts it from memory.
  thread_local std::vector<uint8_t> dx_raw, wb_raw, xp_raw;
  // The activation quants in A-tile order (per 16-token tile and block, 16
  // rows of 32 bytes): a tile load reads 8 whole cache lines, not 16 halves.
  uint8_t* xp = scratch<uint8_t>(xp_raw, static_cast<size_t>(n_amx * nb) * kQK8_0);
  float* dx = scratch<float>(dx_raw, static_cast<size_t>(n_amx * nb));
  for (int64_t t = 0; t < n_amx; ++t) {
    const uint8_t* xt = x_enc + static_cast<size_t>(t) * x_row_bytes;
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(xt);
    for (int64_t b = 0; b < nb; ++b) {
      dx[t * nb + b] = _cvtsh_ss(blocks[b].d);
      std::memcpy(xp + (static_cast<size_t>(t / kTileTokens) * nb + b) * kABytes +
                      (t % kTileTokens) * kQK8_0,
                  blocks[b].qs, kQK8_0);
    }
  }
  uint8_t* wb = scratch<uint8_t>(wb_raw, 2 * static_cast<size_t>(nb) * kBBytes);
  const size_t tile_bytes = avx512::tiled_bytes(w.type, kTileRows, w.cols);
  const size_t quant_bytes = static_cast<size_t>(nb) * avx512::tiled_quant_block_bytes(w.type);
  const auto* base = static_cast<const uint8_t*>(w.data);
  StepArgs a{};
  a.nb = nb;
  constexpr int64_t kStepRows = 2 * kTileRows, kStepTokens = 2 * kTileTokens;
  for (int64_t r = row_begin; r < row_end; r += kStepRows) {
    const int wt = row_end - r > kTileRows ? 2 : 1;
    __mmask16 mask[2] = {0, 0};
    for (int h = 0; h < wt; ++h) {
      const int64_t rh = r + h * kTileRows;
      const uint8_t* tp = base + static_cast<size_t>(rh / kTileRows) * tile_bytes;
      a.scales[h] = tp + quant_bytes;
      uint8_t* dst = wb + static_cast<size_t>(h) * nb * kBBytes;
      signed_b_rows(w.type, tp, nb, dst);
      a.wq[h] = dst;
      mask[h] = static_cast<__mmask16>((1u << std::min<int64_t>(kTileRows, row_end - rh)) - 1u);
    }
    for (int64_t t = 0; t < n_amx; t += kStepTokens) {
      const int tt = n_amx - t > kTileTokens ? 2 : 1;
      a.xq = xp + static_cast<size_t>(t / kTileTokens) * nb * kABytes;
      a.dx = dx + t * nb;
      float* out = y + t * w.rows + r;
      with_tile_counts(tt, wt, [&]<int TT, int WT>() { step<TT, WT>(a, out, w.rows, mask); });
    }
  }
}

}  // namespace strata::amx
