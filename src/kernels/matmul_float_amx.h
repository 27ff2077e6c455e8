// Internal to src/kernels: the AMX bf16 matmul (TDPBF16PS) for F16 and
// BF16 weights in the GGUF layout (matmul_float_amx.cpp, compiled with
// -mamx-* on top of the AVX-512 flags). Call only when
// amx_support().usable() and amx_support().cpu_has_amx_bf16.
//
// Reads the activations avx512_float::encode_activation_row writes (fp32
// rounded through fp16 for F16 weights, bf16 for BF16), so every product is
// exact: a BF16 weight and activation are bf16 already; an F16 value (11
// significant bits) is exactly hi + lo with hi its top 8 bits as bf16 and
// lo the rest (also a bf16), and w x = w_hi x_hi + w_hi x_lo + w_lo x_hi +
// w_lo x_lo. The sums are fp32 in the tile unit's order, not the AVX-512
// kernel's FMA chain, so the two units agree to fp32 rounding but not bit
// for bit: kernels/matmul_unit picks one of them per shape for every n
// (a token's bits never depend on its batch). Within this kernel a token's
// outputs do not depend on n or on its place in a tile.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::amx {

// Whether float_matmul_rows handles this weight (F16/BF16, kGguf, cols a
// multiple of 32).
bool float_matmul_supports(const WeightView& w);

// Rows are handed to threads in whole 16-row tiles.
constexpr int64_t kFloatRowShare = 16;

// y[t][r] for r in [row_begin, row_end), t in [0, n), any n >= 1.
void float_matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                       float* y, int64_t row_begin, int64_t row_end);

}  // namespace strata::amx
