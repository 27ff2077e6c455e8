// AMX int8 matmul for Q4_0 and Q8_0 weights in the kTiled16 layout.
//
// The kTiled16 layout already stores each block of a 16-row tile the way
// the tile unit's second operand wants it: row k (64 bytes) holds the 16
// weight rows' group k (4 bytes each). So a block is one B tile of 8 rows x
// 64 bytes, loaded straight from the packed weight for Q8_0 (Q4_0 nibbles
// are first split into such rows, once per weight tile, into scratch), and
// the A tile is 16 tokens' 32 activation quants of that block, loaded
// straight from the encoded activations with the activation row as stride.
// TDPBSUD (signed activations x unsigned weights) then gives, for token m
// and row j, sum(x (q + 128)) (Q8_0) or sum(x n) (Q4_0), and adding the
// activation row's per-block correction (-128 or -8 times sum(x), from
// avx512::encode_activation_row) leaves the exact block dot.
//
// One tile instruction per block, because each 32-element block has its
// own scales: the int32 result is stored and, per token, converted and
// accumulated with acc = fma((float)isum, d_w * d_x, acc) in block order
// from 0, the VNNI kernel's order, so outputs are bit-identical to it
// (the integer dot is exact in both; the fp32 operations and their order
// are the same).
//
// Tiles: C0/C1 (tmm0/1, 16x16 int32), A0/A1 (tmm2/3, 16 tokens x 32
// bytes), B0/B1 (tmm4/5, 8 x 64 bytes): two blocks in flight, so the tile
// unit works on one while the vector unit scales the other.
#include "kernels/matmul_amx.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

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

TileConfig make_config() {
  TileConfig c;
  c.palette = 1;
  for (int i : {0, 1}) {  // C: 16 tokens x 16 int32
    c.rows[i] = kTileTokens;
    c.colsb[i] = kTileRows * sizeof(int32_t);
  }
  for (int i : {2, 3}) {  // A: 16 tokens x one block of quants
    c.rows[i] = kTileTokens;
    c.colsb[i] = kQK8_0;
  }
  for (int i : {4, 5}) {  // B: 8 groups x 16 rows x 4 bytes
    c.rows[i] = kGroups;
    c.colsb[i] = kBRowBytes;
  }
  return c;
}

thread_local bool t_configured = false;

// Compiler barrier: GCC's tile intrinsics are asm statements that declare
// no (or too small a) memory input, so without it stores that feed them
// (the configuration, the Q4_0 scratch) may be dropped or sunk past them.
inline void memory_barrier() {
  asm volatile("" ::: "memory");
}

void ensure_configured() {
  if (t_configured) return;
  configure_thread_tiles();
}

// y rows [r, r + 16) x tokens [t0, t0 + 16): nb blocks of B tiles at
// `wq` (kBBytes apart), their fp16 scales at `scales` (kScaleBytes apart);
// token m's encoded activations at x + m * xrb; dx/corr: token m block b at
// [m * nb + b].
__attribute__((always_inline)) inline void apply_block(const int32_t* c, const uint8_t* scales,
                                                       int64_t b, const float* dx,
                                                       const int32_t* corr, int64_t nb,
                                                       __m512* acc) {
  const __m512 dw = _mm512_cvtph_ps(
      _mm256_load_si256(reinterpret_cast<const __m256i*>(scales + b * kScaleBytes)));
#pragma GCC unroll 16
  for (int m = 0; m < kTileTokens; ++m) {
    const __m512i isum =
        _mm512_add_epi32(_mm512_load_si512(c + m * kTileRows), _mm512_set1_epi32(corr[m * nb + b]));
    const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(dx[m * nb + b]));
    acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), scale, acc[m]);
  }
}

__attribute__((noinline)) void tile_16x16(const uint8_t* wq, const uint8_t* scales,
                                          const uint8_t* x, size_t xrb, int64_t nb, const float* dx,
                                          const int32_t* corr, float* out, int64_t out_stride,
                                          __mmask16 mask) {
  __m512 acc[kTileTokens];
#pragma GCC unroll 16
  for (int m = 0; m < kTileTokens; ++m) acc[m] = _mm512_setzero_ps();
  alignas(64) int32_t c0[kTileTokens * kTileRows];
  alignas(64) int32_t c1[kTileTokens * kTileRows];
  const uint8_t* xq = x + offsetof(BlockQ8_0, qs);
  const auto xs = static_cast<long>(xrb);
  int64_t b = 0;
  for (; b + 1 < nb; b += 2) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_loadd(2, xq + b * sizeof(BlockQ8_0), xs);
    _tile_loadd(4, wq + b * kBBytes, kBRowBytes);
    _tile_loadd(3, xq + (b + 1) * sizeof(BlockQ8_0), xs);
    _tile_loadd(5, wq + (b + 1) * kBBytes, kBRowBytes);
    _tile_dpbsud(0, 2, 4);
    _tile_dpbsud(1, 3, 5);
    _tile_stored(0, c0, kTileRows * sizeof(int32_t));
    _tile_stored(1, c1, kTileRows * sizeof(int32_t));
    apply_block(c0, scales, b, dx, corr, nb, acc);
    apply_block(c1, scales, b + 1, dx, corr, nb, acc);
  }
  if (b < nb) {
    _tile_zero(0);
    _tile_loadd(2, xq + b * sizeof(BlockQ8_0), xs);
    _tile_loadd(4, wq + b * kBBytes, kBRowBytes);
    _tile_dpbsud(0, 2, 4);
    _tile_stored(0, c0, kTileRows * sizeof(int32_t));
    apply_block(c0, scales, b, dx, corr, nb, acc);
  }
#pragma GCC unroll 16
  for (int m = 0; m < kTileTokens; ++m) _mm512_mask_storeu_ps(out + m * out_stride, mask, acc[m]);
}

// Splits a kTiled16 Q4_0 tile's nibble rows into the Q8_0-shaped B rows
// (row k = low nibbles of packed row k, row k + 4 = its high nibbles).
void unpack_q4_0_tile(const uint8_t* quants, int64_t nb, uint8_t* dst) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* q = quants + static_cast<size_t>(b) * (kBBytes / 2);
    uint8_t* d = dst + static_cast<size_t>(b) * kBBytes;
#pragma GCC unroll 4
    for (int k = 0; k < kGroups / 2; ++k) {
      const __m512i v = _mm512_load_si512(q + k * kBRowBytes);
      _mm512_store_si512(d + k * kBRowBytes, _mm512_and_si512(v, low4));
      _mm512_store_si512(d + (k + kGroups / 2) * kBRowBytes,
                         _mm512_and_si512(_mm512_srli_epi16(v, 4), low4));
    }
  }
  memory_barrier();  // the stores must land before tileloadd reads them
}

// Thread-local 64-byte aligned scratch, reused across calls.
template <class T>
T* scratch(std::vector<uint8_t>& raw, size_t count) {
  const size_t bytes = count * sizeof(T) + 64;
  if (raw.size() < bytes) raw.resize(bytes);
  const auto addr = reinterpret_cast<uintptr_t>(raw.data());
  return reinterpret_cast<T*>(raw.data() + ((64 - addr % 64) % 64));
}

}  // namespace

bool matmul_supports(const WeightView& w) {
  return w.layout == WeightLayout::kTiled16 && (w.type == DType::kQ8_0 || w.type == DType::kQ4_0);
}

bool configure_thread_tiles() {
  TileConfig cfg = make_config();
  // GCC 12's _tile_loadconfig declares it reads 8 bytes of cfg, so without
  // this barrier the stores of the other 56 are dead to it and dropped.
  asm volatile("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
  alignas(64) uint8_t back[sizeof(TileConfig)];
  std::memset(back, 0xA5, sizeof(back));
  asm volatile("" : : "r"(back) : "memory");
  _tile_storeconfig(back);
  asm volatile("" : : "r"(back) : "memory");
  t_configured = true;
  return std::memcmp(&cfg, back, sizeof(cfg)) == 0;
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
  // Per token and block: the activation scale as fp32 and the correction,
  // gathered once so the inner loop broadcasts them from memory.
  thread_local std::vector<uint8_t> dx_raw, corr_raw, q4_raw;
  float* dx = scratch<float>(dx_raw, static_cast<size_t>(n_amx * nb));
  int32_t* corr = scratch<int32_t>(corr_raw, static_cast<size_t>(n_amx * nb));
  for (int64_t t = 0; t < n_amx; ++t) {
    const uint8_t* xt = x_enc + static_cast<size_t>(t) * x_row_bytes;
    const auto* blocks = reinterpret_cast<const BlockQ8_0*>(xt);
    for (int64_t b = 0; b < nb; ++b) dx[t * nb + b] = _cvtsh_ss(blocks[b].d);
    std::memcpy(corr + t * nb, xt + static_cast<size_t>(nb) * sizeof(BlockQ8_0),
                static_cast<size_t>(nb) * sizeof(int32_t));
  }
  const bool is_q4 = w.type == DType::kQ4_0;
  uint8_t* q4 = is_q4 ? scratch<uint8_t>(q4_raw, static_cast<size_t>(nb) * kBBytes) : nullptr;
  const size_t tile_bytes = avx512::tiled_bytes(w.type, kTileRows, w.cols);
  const size_t quant_bytes = static_cast<size_t>(nb) * avx512::tiled_quant_block_bytes(w.type);
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; r += kTileRows) {
    const uint8_t* tp = base + static_cast<size_t>(r / kTileRows) * tile_bytes;
    const uint8_t* wq = tp;
    if (is_q4) {
      unpack_q4_0_tile(tp, nb, q4);
      wq = q4;
    }
    const auto mask =
        static_cast<__mmask16>((1u << std::min<int64_t>(kTileRows, row_end - r)) - 1u);
    for (int64_t t = 0; t < n_amx; t += kTileTokens) {
      tile_16x16(wq, tp + quant_bytes, x_enc + static_cast<size_t>(t) * x_row_bytes, x_row_bytes,
                 nb, dx + t * nb, corr + t * nb, y + t * w.rows + r, w.rows, mask);
    }
  }
}

}  // namespace strata::amx
