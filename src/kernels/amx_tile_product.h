// The int8 tile product every AMX int8 kernel issues per K step, once its
// operand tiles are loaded: A tiles 4 (tokens 0-15) and 5 (tokens 16-31),
// B tiles 6 and 7 (row tiles 0 and 1); C[2 tt + h] = A[tt] x B[h] (signed x
// signed, TDPBSSD), each C tile zeroed first, then stored to `c` as 16 x 16
// int32 (C tile k at c + k * 256, rows 64 bytes apart).
//
// Also the step dispatch and the aligned scratch the AMX kernels share.
//
// Only for *_amx.cpp (compiled with the AMX flags): the tile instructions
// stay inside strata::amx, as the isa_confinement test checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/amx_intrinsics.h"

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

// Runs f.template operator()<TT, WT>() for a step's runtime counts of token
// tiles (tt) and weight tiles (wt), each 1 or 2, so each kernel's step is
// compiled for the four shapes it meets.
template <class F>
[[gnu::always_inline]] inline void with_tile_counts(int tt, int wt, F&& f) {
  if (tt == 2 && wt == 2) {
    f.template operator()<2, 2>();
  } else if (tt == 2) {
    f.template operator()<2, 1>();
  } else if (wt == 2) {
    f.template operator()<1, 2>();
  } else {
    f.template operator()<1, 1>();
  }
}

// A 64-byte aligned array of `count` T in `raw` (grown as needed; the
// kernels keep `raw` thread-local and reuse it across calls).
template <class T>
T* scratch(std::vector<uint8_t>& raw, size_t count) {
  const size_t bytes = count * sizeof(T) + 64;
  if (raw.size() < bytes) raw.resize(bytes);
  const auto addr = reinterpret_cast<uintptr_t>(raw.data());
  return reinterpret_cast<T*>(raw.data() + ((64 - addr % 64) % 64));
}

}  // namespace strata::amx
