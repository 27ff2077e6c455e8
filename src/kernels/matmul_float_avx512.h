// Internal to src/kernels: the AVX-512 matmul for F32, F16 and BF16 weights
// (matmul_float_avx512.cpp, compiled with -mavx512f/bw/vl). Call only when
// kernel_isa() == KernelIsa::kAvx512Vnni; it then serves every n, so an
// output rounds the same whatever the batch:
//   per output, lane l of a 16-lane fp32 accumulator sums w[k] * x[k] for
//   k = l, l + 16, l + 32, ... with one fused multiply-add each, in k order
//   (a partial last vector is zero-padded); then the 16 lanes are added by
//   a fixed tree (lane i + lane i + 8, then j + j + 4, k + k + 2, 0 + 1),
//   computed for 16 outputs at once.
// Activations are those of avx2::encode_activation_row: fp32, rounded
// through fp16 / bf16 for F16 / BF16 weights (as llama.cpp rounds them).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::avx512_float {

// Whether matmul_rows handles this weight type.
bool matmul_supports(DType weight_type);

size_t activation_row_bytes(DType weight_type, int64_t cols);
void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst);

// Rows are handed to threads in multiples of this (the kernel's row tile).
constexpr int64_t kRowShare = 4;

// y[t][r] for r in [row_begin, row_end), t in [0, n); x_enc holds n rows
// from encode_activation_row, x_row_bytes apart.
void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end);

}  // namespace strata::avx512_float
