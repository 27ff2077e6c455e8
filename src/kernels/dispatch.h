// Kernel dispatch: which implementation (scalar reference, AVX2/FMA, or
// AVX2 plus AVX-512 VNNI) the public kernels in matmul.h, ops.h and
// attention.h use.
//
// The choice is made once, on first use, from the detected CPU (capped by
// the environment variable STRATA_KERNEL_ISA=scalar|avx2|avx512vnni). Tests call
// set_kernel_isa() to force a path, so one process can check each; the
// setting is process-wide (an atomic), so do not flip it while kernels run.
// kAvx512Vnni is a superset of kAvx2: kernels without an AVX-512 version
// run their AVX2 one (test with kernel_isa_has_avx2()). STRATA_KERNEL_ISA=amx
// keeps the detected ISA and forces the AMX tile unit for packed Q8_0/Q4_0
// matmuls where the CPU has it; any other value turns AMX off (see
// kernels/matmul_unit.h, which picks AMX or VNNI per shape otherwise).
#pragma once

namespace strata {

enum class KernelIsa {
  kScalar,      // portable C++, the reference
  kAvx2,        // AVX2 + FMA + F16C translation units (*_avx2.cpp)
  kAvx512Vnni,  // kAvx2 plus AVX-512 F/BW/VL/VNNI units (*_avx512.cpp)
};

// The best ISA this CPU supports.
KernelIsa detected_kernel_isa();

// The ISA the kernels use now (detected_kernel_isa() unless overridden).
KernelIsa kernel_isa();

// Whether kernels at `isa` may run the *_avx2.cpp code.
inline bool kernel_isa_has_avx2(KernelIsa isa) {
  return isa == KernelIsa::kAvx2 || isa == KernelIsa::kAvx512Vnni;
}

// Forces an ISA; a request the CPU cannot run falls back to the best one it
// can below it (kAvx512Vnni -> kAvx2 -> kScalar). Returns the ISA selected.
KernelIsa set_kernel_isa(KernelIsa isa);

const char* kernel_isa_name(KernelIsa isa);

}  // namespace strata
