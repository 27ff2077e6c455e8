// Internal to src/kernels: the AVX2/FMA/F16C matmul family for F32, F16 and
// BF16 weights against fp32 activations (matmul_float_avx2.cpp). Called only
// by avx2::matmul_rows and avx2::encode_activation_row (matmul_avx2.h),
// which own the dispatch, so call only when kernel_isa_has_avx2(kernel_isa()).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::avx2 {

// F16 / BF16 activations are kept as fp32 values rounded through f16 / bf16,
// which gives the same products as converting them without reconverting.
void encode_f16_activation_row(const float* x, int64_t cols, float* out);
void encode_bf16_activation_row(const float* x, int64_t cols, float* out);

// matmul_rows for a kF32, kF16 or kBF16 weight (see avx2::matmul_rows).
void matmul_float_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                       float* y, int64_t row_begin, int64_t row_end);

}  // namespace strata::avx2
