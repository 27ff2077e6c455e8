// Kernel dispatch: which implementation (scalar reference or AVX2/FMA) the
// public kernels in matmul.h, ops.h and attention.h use.
//
// The choice is made once, on first use, from the detected CPU. Tests call
// set_kernel_isa() to force a path, so one process can check both; the
// setting is process-wide (an atomic), so do not flip it while kernels run.
#pragma once

namespace strata {

enum class KernelIsa {
  kScalar,  // portable C++, the reference
  kAvx2,    // AVX2 + FMA + F16C translation units (*_avx2.cpp)
};

// The best ISA this CPU supports.
KernelIsa detected_kernel_isa();

// The ISA the kernels use now (detected_kernel_isa() unless overridden).
KernelIsa kernel_isa();

// Forces an ISA; requesting kAvx2 on a CPU without it falls back to kScalar.
// Returns the ISA actually selected.
KernelIsa set_kernel_isa(KernelIsa isa);

const char* kernel_isa_name(KernelIsa isa);

}  // namespace strata
