// Internal to src/kernels: the AMX int8 matmul for Q4_K and Q6_K weights in
// the GGUF layout (matmul_kquant_amx.cpp, compiled with -mamx-* on top of
// the AVX-512 flags). Call only when amx_support().usable(); the per-shape
// choice between it and the VNNI kernel (avx512_kquant) is
// kernels/matmul_unit.
//
// Reads the activations avx512_kquant::encode_activation_row writes (Q8_K)
// and gives the bits of avx512_kquant::matmul_rows, hence of the scalar
// reference, for every input: the same exact integer sums per sub-block
// (or super-block) and the same fp32 operations in the same order (see
// matmul_kquant_avx512.h), so a token's outputs do not depend on which
// unit its step ran on.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::amx {

// Whether kquant_matmul_rows handles this weight (Q4_K or Q6_K, kGguf).
bool kquant_matmul_supports(const WeightView& w);

// As avx512_kquant::matmul_rows (row_begin a multiple of 16): whole
// 16-token tiles run on the tile unit, the last n % 16 tokens on the VNNI
// kernel.
void kquant_matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                        float* y, int64_t row_begin, int64_t row_end);

}  // namespace strata::amx
