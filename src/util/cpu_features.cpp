#include "util/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace strata {

CpuFeatures detect_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  f.has_avx2 = __builtin_cpu_supports("avx2");
  f.has_fma = __builtin_cpu_supports("fma");
  // clang 14's __builtin_cpu_supports does not know "f16c": read CPUID.1:ECX.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  f.has_f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
#endif
  return f;
}

}  // namespace strata
