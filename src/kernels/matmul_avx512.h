// Internal to src/kernels: the AVX-512 VNNI int8 GEMM (matmul_avx512.cpp,
// compiled with -mavx512f/bw/vl/vnni). Call only when
// kernel_isa() == KernelIsa::kAvx512Vnni and matmul_supports() is true;
// everything else (decode GEMV, other weight types) stays on the AVX2 path.
//
// Q4_0 and Q8_0 weights are expanded, 16 rows at a time, into a thread-local
// int8 scratch laid out so that one 512-bit vpdpbusd adds four products for
// each of the 16 rows against one token's broadcast activations. Integer
// sums are exact and the fp32 combination order per output is the AVX2
// kernel's, so results are bit-identical to it: Q4_0 accumulates
// fma((float)isum_block, d_w * d_x, acc) in block order (also equal to
// vec_dot::dot_ref); Q8_0 keeps one accumulator per 4-element group and sums
// them in the AVX2 kernel's order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::avx512 {

// Whether matmul_rows handles this weight type for n activation rows.
bool matmul_supports(DType weight_type, int64_t n);

// Encodes one activation row: Q8_0 blocks with every quant XOR 0x80 (so it
// reads as x + 128 unsigned); the scales are unchanged.
void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst);
size_t activation_row_bytes(DType weight_type, int64_t cols);

// Thread ith's share of the weight rows, aligned to the 16-row tile.
void split_rows(int64_t rows, int ith, int nth, int64_t* begin, int64_t* end);

// y[t][r] for r in [row_begin, row_end), t in [0, n); x_enc holds n rows
// from encode_activation_row, x_row_bytes apart.
void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end);

}  // namespace strata::avx512
