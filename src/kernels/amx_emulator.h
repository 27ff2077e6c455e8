// AmxEmulator: the AMX tile instructions the kernels use, in plain C++, so
// that the AMX kernels (*_amx.cpp) run and are tested on CPUs without AMX.
//
// Built into strata_kernels_amx_emulated only (a test library: the same
// kernel sources compiled with STRATA_AMX_EMULATE, where amx_intrinsics.h
// routes _tile_* here); the strata binary never contains it. It follows
// the Intel SDM's definitions for palette 1 (8 tiles of up to 16 rows x 64
// bytes, per-thread state):
// - ldtilecfg: a 64-byte configuration (palette, start_row, colsb[16],
//   rows[16]); it zeroes every tile. Palette 0 releases the tiles.
// - tileloadd / tilestored: rows x colsb bytes, row r at base + r * stride;
//   a load zeroes the bytes past colsb and the rows past rows.
// - tdpb[su][su]d: dst.i32[m][n] += the 4-byte dot of src1 row m dword k
//   with src2 row k dword n, over k < src1.colsb / 4, wrapping (no
//   saturation), each operand signed or unsigned as the mnemonic says.
// - tdpbf16ps: dst.f32[m][n] += a0 * b0, then += a1 * b1 (each product exact
//   in fp32, each add rounded to nearest even), bf16 denormal inputs read as
//   zero and denormal results flushed to zero.
// Every shape condition under which the CPU raises #UD (an unconfigured
// tile, colsb not a multiple of 4, mismatched rows or columns, the same
// tile twice) aborts with a message naming it, so a kernel that would fault
// on the hardware fails its test here too. What it cannot show: speed, and
// the compiler hazards of the real intrinsics (GCC 12 dropping the stores
// that fill the configuration), which only the hardware tests catch.
#pragma once

#include <cstdint>

namespace strata::amx_emulator {

void load_config(const void* config);
void store_config(void* config);
void release();
void load(int tile, const void* base, long stride);
void store(int tile, void* base, long stride);
void zero(int tile);
// dst += src1 x src2 in int8 (kSigned1 / kSigned2: whether src1's / src2's
// bytes are signed).
template <bool kSigned1, bool kSigned2>
void dot_int8(int dst, int src1, int src2);
void dot_bf16(int dst, int src1, int src2);

}  // namespace strata::amx_emulator
