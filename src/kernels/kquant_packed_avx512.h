// Internal to the Q4_K/Q6_K kernels (matmul_kquant_avx512.cpp and
// matmul_kquant_amx.cpp, both compiled with the AVX-512 flags; include it
// from nowhere else): a 16-row tile's super-block packed with row j in
// dword lane j, as the VNNI kernel multiplies it.
//
// q[i] holds, in lane j, row j's four quants of elements 4i..4i+3 as
// unsigned bytes (Q4_K nibbles 0..15, Q6_K values 0..63, i.e. q + 32). That
// is also the tile unit's B operand: q[8s..8s+7] is Q4_K sub-block s as a
// B tile of 8 rows x 64 bytes (16 weight rows x 4 quants), so the AMX kernel
// packs with the same code and multiplies the same integers.
#pragma once

// GCC 12's AVX-512 intrinsics seed their "undefined" pass-through operands
// with a self-initialized variable, which -Wuninitialized reports when inlined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/quant.h"

namespace strata::avx512_kquant {

constexpr int kRowTile = 16;        // rows per tile: one dword lane each
constexpr int kGroups = kQK_K / 4;  // four-element groups per super-block

struct PackedQ4K {
  __m512i q[kGroups];
  __m512i sc[8];  // sub-block scale, int32
  __m512i mm[4];  // pair c's mins as the int16 pair (m_2c, m_2c+1)
  __m512 d, dmin;
};

struct PackedQ6K {
  __m512i q[kGroups];
  __m512i sc[16];  // sub-block scale, int32
  __m512i nsc[8];  // int16 pairs (-32 sc_2i, -32 sc_2i+1)
  __m512 d;
};

// The rows of a tile; rows past the weight's end repeat its last row (their
// outputs are computed but never stored).
struct RowTile {
  const uint8_t* row[kRowTile];
  int num_rows;
};

// Copies rows [r0, min(r0 + 16, r_end)) of w (kGguf) into *stage in address
// order and returns the tile over the copy (packing 16 interleaved rows
// straight from DRAM streams at a fraction of the bandwidth).
RowTile stage_row_tile(const WeightView& w, int64_t r0, int64_t r_end, std::vector<uint8_t>* stage);

// Packs super-block b of the tile's rows.
void pack_q4_k(const RowTile& rt, int64_t b, PackedQ4K* p);
void pack_q6_k(const RowTile& rt, int64_t b, PackedQ6K* p);

}  // namespace strata::avx512_kquant
