// Internal to src/kernels: the AVX-512 VNNI matmul for Q4_K and Q6_K weights
// (matmul_kquant_avx512.cpp, compiled with -mavx512f/bw/vl/vnni), for every
// n: decode GEMV (n = 1), batched decode, prefill chunks and whole prompts.
// Call only when kernel_isa() == KernelIsa::kAvx512Vnni and
// matmul_supports() is true. The same interface as strata::avx512; stateless
// apart from thread-local scratch, so concurrent calls from different
// threads are safe.
//
// Weights are read in the raw GGUF layout, or (no AMX) the kTiled16
// layout below, which the model loader builds. A thread walks its rows in tiles of 16; a few
// super-blocks (256 elements) of a tile at a time are transposed in registers into 64 vectors, one
// per four-element group, with row j's quants in dword lane j, plus the tile's scales, mins and d.
// vpdpbusd(group, broadcast(activation group)) then adds four products into each row's lane, so no
// horizontal sums are needed and the sub-block scales apply per lane. Each packed block is used by
// every token (eight per register tile) before the next is packed.
//
// GGUF layout: each tile is first copied in address order to a per-thread
// stage (packing 16 interleaved rows straight from DRAM streamed at a
// fraction of the bandwidth), and up to 3 tokens (decode) a row-wise kernel
// runs instead: one row at a time in address order, each 64-element vector
// in element order so the activations load as they are, per-block sums
// reduced horizontally. kTiled16: the tile kernel for every n, unpacking
// each super-block (masks and shifts, no transpose) straight from the
// stream. All paths give the same bits (below).
//
// Activations: Q8_K, byte for byte as vec_dot::encode_activation_row writes
// them (nothing appended).
//
// Rounding: the same operations, in the same order, as vec_dot::dot_ref, so
// every output is bit-identical to the scalar reference whatever n, the
// token's place in a tile, or the row split between threads:
//   Q4_K: per super-block, per pair c of sub-blocks (64 elements), the exact
//         integers S_c = sc_2c * dot_2c + sc_2c+1 * dot_2c+1 and
//         M_c = m_2c * bsum_2c + m_2c+1 * bsum_2c+1; then
//         acc = fma(float(S_c), d_w * d_x, acc),
//         acc_min = fma(float(M_c), dmin_w * d_x, acc_min), in (block, c)
//         order from 0; the result is acc - acc_min.
//   Q6_K: per super-block the exact integer sum_g sc_g * dot_g(q - 32, x);
//         sum = sum + (d_w * d_x) * float(isum) (a rounded multiply and a
//         rounded add, no fused multiply-add), in block order from 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::avx512_kquant {

// Whether matmul_rows handles this weight type (Q4_K, Q6_K).
bool matmul_supports(DType weight_type);

// Encodes one activation row as Q8_K blocks, the bytes of
// vec_dot::encode_activation_row.
void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst);
size_t activation_row_bytes(DType weight_type, int64_t cols);

// Rows are handed to threads in whole 16-row tiles.
constexpr int64_t kRowShare = 16;

// The WeightLayout::kTiled16 layout of a Q4_K or Q6_K weight, which the
// model loader builds on a CPU that runs this kernel and has no usable AMX
// unit (the AMX kernel reads the GGUF layout): rows in tiles of 16, the last
// tile padded by repeating the last row; within a tile, super-block by
// super-block, vectors of 64 bytes each holding one dword of every row, row
// j in lane j. Q4_K, 36 vectors: the header dwords (d | dmin << 16, then the
// three dwords of the 12 scale bytes) and the 32 dwords of quants, i.e. the
// GGUF bytes transposed, the same size. Q6_K, 53 vectors: the 4 dwords of
// scales, the 16 of qh, the 32 of ql, then the 16 rows' d (32 bytes and 32
// of padding; 1% over the GGUF size). A tile is one sequential run, and no
// per-call copy or transpose is left: with a few tokens (batched decode,
// speculative verification) that copy and transpose cost more than the
// arithmetic.
bool tiled_supports(DType weight_type);  // Q4_K, Q6_K
size_t tiled_bytes(DType weight_type, int64_t rows, int64_t cols);
// Writes row tiles [tile_begin, tile_end) of w (kGguf) into dst, the start
// of a 64-byte aligned buffer of tiled_bytes() bytes.
void pack_tiles(const WeightView& w, int64_t tile_begin, int64_t tile_end, void* dst);

// y[t][r] for r in [row_begin, row_end), t in [0, n); x_enc holds n rows
// from encode_activation_row, x_row_bytes apart. w in either layout; for
// kTiled16, row_begin is a multiple of kRowShare.
void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end);

}  // namespace strata::avx512_kquant
