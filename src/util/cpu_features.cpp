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
  // CPUID.7.0: EBX bits 16 (F), 30 (BW), 31 (VL); ECX bit 11 (VNNI). The OS
  // must also save the ZMM and opmask state: XCR0 bits 1, 2, 5, 6, 7.
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0 && f.has_avx2) {
    unsigned xcr0_lo = 0, xcr0_hi = 0;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    const bool os_saves_zmm = (xcr0_lo & 0xE6u) == 0xE6u;
    f.has_avx512f = os_saves_zmm && (ebx & (1u << 16)) != 0;
    f.has_avx512bw = os_saves_zmm && (ebx & (1u << 30)) != 0;
    f.has_avx512vl = os_saves_zmm && (ebx & (1u << 31)) != 0;
    f.has_avx512vnni = os_saves_zmm && (ecx & (1u << 11)) != 0;
  }
#endif
  return f;
}

}  // namespace strata
