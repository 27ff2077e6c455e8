// Internal to src/kernels: the AMX int8 matmul for Q4_0 and Q8_0 weights in
// the WeightLayout::kTiled16 layout (matmul_amx.cpp, compiled with -mamx-*
// on top of the AVX-512 flags). Call only when amx_support().usable(); the
// per-shape choice between it and the VNNI kernel is kernels/matmul_unit.
//
// Bit-identical to avx512::matmul_rows for every input: the same exact
// per-block integer dots and the same fp32 scale and FMA order, so a
// token's outputs do not depend on which unit its step ran on.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/matmul.h"

namespace strata::amx {

// Whether matmul_rows handles this weight (Q4_0/Q8_0 in kTiled16).
bool matmul_supports(const WeightView& w);

// Loads this thread's tile configuration (once per thread; matmul_rows does
// it itself). Returns whether the configuration read back with
// _tile_storeconfig equals the one written: false would mean the compiler
// dropped the stores that fill it (GCC 12 does without a barrier).
bool configure_thread_tiles();

// As avx512::matmul_rows for a kTiled16 weight (row_begin a multiple of
// 16): whole 16-token tiles run on the tile unit, the last n % 16 tokens on
// the VNNI kernel.
void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end);

// The tile unit's int8 peak as the kernel uses it (16x16 tokens x rows
// per TDPBSSD, K = 32): `iters` rounds of four independent TDPBSSD on this
// thread, 4 * 16 * 16 * 32 multiply-adds each. Returns a value to sink.
int tile_dot_loop(int64_t iters);

}  // namespace strata::amx
