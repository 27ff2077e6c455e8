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

// The tile shapes the kernels use, K = the bytes of activation per A-tile
// row: kK32 (one 32-element block; Q8_0, Q4_0, Q4_K's sub-blocks) and kK64
// (Q6_K). tmm0-3 hold C (16 x 16 int32), tmm4-5 A (16 tokens x K bytes),
// tmm6-7 B (K / 4 rows x 64 bytes: 16 weight rows x 4 quants).
enum class TileShape : uint8_t { kK32, kK64 };

// Loads this thread's tile configuration for `shape`. Returns whether the
// configuration read back with _tile_storeconfig equals the one written:
// false would mean the compiler dropped the stores that fill it (GCC 12
// does without a barrier).
bool configure_thread_tiles(TileShape shape = TileShape::kK32);

// Loads `shape`'s configuration unless this thread holds it already (every
// kernel calls it before its first tile instruction).
void use_tile_shape(TileShape shape);

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
