// The int8 tile product every AMX int8 kernel issues per K step, once its
// operand tiles are loaded: A tiles 4 (tokens 0-15) and 5 (tokens 16-31),
// B tiles 6 and 7 (row tiles 0 and 1); C[2 tt + h] = A[tt] x B[h] (signed x
// signed, TDPBSSD), each C tile zeroed first, then stored to `c` as 16 x 16
// int32 (C tile k at c + k * 256, rows 64 bytes apart).
//
// Only for *_amx.cpp (compiled with the AMX flags): the tile instructions
// stay inside strata::amx, as the isa_confinement test checks.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace strata::amx {

template <int TT, int WT>
[[gnu::always_inline]] inline void dpbssd_and_store(int32_t* c) {
  constexpr int kCInts = 16 * 16;
  constexpr long kCStride = 16 * sizeof(int32_t);
  _tile_zero(0);
  _tile_dpbssd(0, 4, 6);
  if constexpr (WT == 2) {
    _tile_zero(1);
    _tile_dpbssd(1, 4, 7);
  }
  if constexpr (TT == 2) {
    _tile_zero(2);
    _tile_dpbssd(2, 5, 6);
  }
  if constexpr (TT == 2 && WT == 2) {
    _tile_zero(3);
    _tile_dpbssd(3, 5, 7);
  }
  _tile_stored(0, c, kCStride);
  if constexpr (WT == 2) _tile_stored(1, c + kCInts, kCStride);
  if constexpr (TT == 2) _tile_stored(2, c + 2 * kCInts, kCStride);
  if constexpr (TT == 2 && WT == 2) _tile_stored(3, c + 3 * kCInts, kCStride);
}

}  // namespace strata::amx
