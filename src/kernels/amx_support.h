// AmxSupport: whether this process may run the AMX tile kernels (*_amx.cpp).
//
// Three conditions, checked once per process on first call: the CPU has
// AMX-TILE and AMX-INT8 (CPUID.7.0:EDX bits 24, 25) plus the AVX-512 VNNI
// set the AMX kernels also use; the OS saves the tile state (XCR0 bits 17
// and 18, XTILECFG and XTILEDATA); and Linux granted this process the
// 8 KiB tile-data state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA),
// without which the first tile instruction faults). Thread-safe; compiled
// for baseline x86-64, so any CPU may call it.
#pragma once

namespace strata {

struct AmxSupport {
  bool cpu_has_amx_int8 = false;  // CPUID says AMX-TILE + AMX-INT8
  bool cpu_has_amx_bf16 = false;  // CPUID says AMX-BF16
  bool os_saves_tiles = false;    // XCR0 bits 17 and 18
  bool permission = false;        // arch_prctl granted XTILEDATA
  bool has_vnni = false;          // the AVX-512 VNNI kernels can run too

  // Whether the AMX int8 kernels may run.
  bool usable() const { return cpu_has_amx_int8 && os_saves_tiles && permission && has_vnni; }
  // Why they may not, for logs and skipped tests ("" when usable()).
  const char* reason() const;
};

// Detects once (and requests the tile permission once); later calls return
// the same value.
const AmxSupport& amx_support();

}  // namespace strata
