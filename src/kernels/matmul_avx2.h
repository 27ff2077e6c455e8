// Internal to src/kernels: the AVX2/FMA/F16C matmul backend, one kernel
// family per file (all compiled with those flags): Q8_0/Q4_0 and this
// interface in matmul_avx2.cpp, F32/F16/BF16 in matmul_float_avx2.cpp,
// Q4_K/Q6_K in matmul_kquant_avx2.cpp. Call only when
// kernel_isa_has_avx2(kernel_isa()).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::avx2 {

// Whether matmul_rows handles this weight type.
bool matmul_supports(DType weight_type);

// Encodes one activation row for matmul_rows: the same bytes as
// vec_dot::encode_activation_row for quantized weights; for F16/BF16 weights
// fp32 values rounded through f16/bf16 (same products, no reconversion).
void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst);
size_t activation_row_bytes(DType weight_type, int64_t cols);

// Rows are handed to threads in multiples of this (the kernel's row tile).
constexpr int64_t kRowShare = 4;

// y[t][r] for r in [row_begin, row_end), t in [0, n): x_enc holds n encoded
// activation rows of x_row_bytes each (vec_dot::activation_type).
void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end);

}  // namespace strata::avx2
