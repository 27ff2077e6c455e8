// The x86 intrinsics for the AMX kernels (*_amx.cpp): <immintrin.h>, and
// with STRATA_AMX_EMULATE (the test library strata_kernels_amx_emulated)
// the tile instructions they issue routed to amx_emulator.h instead, so
// the same kernel code runs on any CPU with AVX-512 VNNI.
#pragma once

#include <immintrin.h>

#if defined(STRATA_AMX_EMULATE)
#include "kernels/amx_emulator.h"

// GCC and Clang define the tile intrinsics as macros over inline asm or
// builtins (_tile_loadconfig / _tile_storeconfig as inline functions,
// which a function-like macro of the same name shadows from here on).
#undef _tile_loadd
#undef _tile_stored
#undef _tile_zero
#undef _tile_dpbssd
#undef _tile_dpbsud
#undef _tile_dpbusd
#undef _tile_dpbuud
#undef _tile_dpbf16ps
#define _tile_loadconfig(config) ::strata::amx_emulator::load_config(config)
#define _tile_storeconfig(config) ::strata::amx_emulator::store_config(config)
#define _tile_release() ::strata::amx_emulator::release()
#define _tile_loadd(tile, base, stride) ::strata::amx_emulator::load(tile, base, stride)
#define _tile_stored(tile, base, stride) ::strata::amx_emulator::store(tile, base, stride)
#define _tile_zero(tile) ::strata::amx_emulator::zero(tile)
#define _tile_dpbssd(dst, src1, src2) ::strata::amx_emulator::dot_int8<true, true>(dst, src1, src2)
#define _tile_dpbsud(dst, src1, src2) ::strata::amx_emulator::dot_int8<true, false>(dst, src1, src2)
#define _tile_dpbusd(dst, src1, src2) ::strata::amx_emulator::dot_int8<false, true>(dst, src1, src2)
#define _tile_dpbuud(dst, src1, src2) \
  ::strata::amx_emulator::dot_int8<false, false>(dst, src1, src2)
#define _tile_dpbf16ps(dst, src1, src2) ::strata::amx_emulator::dot_bf16(dst, src1, src2)
#endif
