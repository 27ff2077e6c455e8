// Internal to src/kernels: the AVX-512 VNNI int8 matmul for Q4_0 and Q8_0
// weights (matmul_avx512.cpp, compiled with -mavx512f/bw/vl/vnni). Call only
// when kernel_isa() == KernelIsa::kAvx512Vnni and matmul_supports() is true;
// it then serves every n, so a given output rounds the same whatever the
// batch (see the .cpp for the rounding order).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::avx512 {

// Whether matmul_rows handles this weight type.
bool matmul_supports(DType weight_type);

// Encodes one activation row: the Q8_0 blocks of avx2::encode_activation_row
// followed by one int32 per block, -s * (sum of its quants), s = 128 for Q8_0
// weights and 8 for Q4_0.
void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst);
size_t activation_row_bytes(DType weight_type, int64_t cols);

// The WeightLayout::kTiled16 layout of a Q4_0/Q8_0 weight (see the .cpp):
// its size in bytes, and pack_tiles, which writes row tiles
// [tile_begin, tile_end) (16 rows each) of w, a kGguf weight, into dst, the
// start of a 64-byte aligned buffer of tiled_bytes() bytes. Tiles are
// independent, so threads may pack disjoint ranges at once.
constexpr int64_t kTiledRows = 16;  // rows per tile, one int32 lane each
size_t tiled_bytes(DType weight_type, int64_t rows, int64_t cols);
// Within a kTiled16 tile of nb blocks: block b's quants start at
// b * tiled_quant_block_bytes(type) (Q8_0: eight 64-byte rows, row k = the
// 16 rows' group k as unsigned bytes q + 128; Q4_0: four 64-byte rows of
// nibble pairs, low nibbles group k, high nibbles group k + 4), and block
// b's 16 fp16 scales at nb * tiled_quant_block_bytes(type) + 32 * b. The AMX
// kernel (matmul_amx.cpp) reads the same bytes.
size_t tiled_quant_block_bytes(DType weight_type);
void pack_tiles(const WeightView& w, int64_t tile_begin, int64_t tile_end, void* dst);

// Rows are handed to threads in whole 16-row tiles.
constexpr int64_t kRowShare = kTiledRows;

// y[t][r] for r in [row_begin, row_end), t in [0, n); x_enc holds n rows
// from encode_activation_row, x_row_bytes apart. w is in either layout; for
// kTiled16, row_begin is a multiple of kRowShare.
void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end);

}  // namespace strata::avx512
