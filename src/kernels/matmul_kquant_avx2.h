// Internal to src/kernels: the AVX2/FMA/F16C matmul family for Q4_K and Q6_K
// weights against Q8_K activations (matmul_kquant_avx2.cpp). Called only by
// avx2::matmul_rows and avx2::encode_activation_row (matmul_avx2.h), which
// own the dispatch, so call only when kernel_isa_has_avx2(kernel_isa()).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace strata::avx2 {

// The Q8_K blocks of the n (a multiple of 256) values x, byte-identical to
// vec_dot::encode_activation_row.
void encode_q8_k(const float* x, BlockQ8_K* y, int64_t n);

// matmul_rows for a kQ4_K or kQ6_K weight (see avx2::matmul_rows).
void matmul_kquant_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                        float* y, int64_t row_begin, int64_t row_end);

}  // namespace strata::avx2
