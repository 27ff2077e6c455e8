#include "kernels/amx_support.h"

#include "util/cpu_features.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace strata {
namespace {

#if defined(__linux__) && defined(__x86_64__) && !defined(STRATA_AMX_EMULATE)
// From <asm/prctl.h> (Linux 5.16+); spelled out so older headers build.
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr unsigned long kXfeatureXtiledata = 18;

// Asks Linux for the tile-data state. Already granted (a second caller, or
// a library in the same process) reads back as granted.
bool request_tile_permission() {
  unsigned long mask = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &mask) == 0 &&
      (mask & (1ul << kXfeatureXtiledata)) != 0) {
    return true;
  }
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  mask = 0;
  return syscall(SYS_arch_prctl, kArchGetXcompPerm, &mask) == 0 &&
         (mask & (1ul << kXfeatureXtiledata)) != 0;
}
#endif

AmxSupport detect_amx_support() {
  AmxSupport s;
  s.has_vnni = detect_cpu_features().can_run_avx512_vnni_kernels();
#if defined(STRATA_AMX_EMULATE)
  // The test library strata_kernels_amx_emulated: its tile instructions are
  // amx_emulator.h's, which every CPU runs (the kernels' VNNI code still
  // needs has_vnni).
  s.cpu_has_amx_int8 = s.cpu_has_amx_bf16 = s.os_saves_tiles = s.permission = true;
#elif defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return s;
  s.cpu_has_amx_bf16 = (edx & (1u << 22)) != 0;
  s.cpu_has_amx_int8 = (edx & (1u << 24)) != 0 && (edx & (1u << 25)) != 0;
  // XGETBV faults unless the OS enabled XSAVE (CPUID.1:ECX bit 27).
  unsigned eax1 = 0, ebx1 = 0, ecx1 = 0, edx1 = 0;
  if (__get_cpuid(1, &eax1, &ebx1, &ecx1, &edx1) == 0 || (ecx1 & (1u << 27)) == 0) return s;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  s.os_saves_tiles = (xcr0_lo & (3u << 17)) == (3u << 17);
#if defined(__linux__)
  if (s.cpu_has_amx_int8 && s.os_saves_tiles) s.permission = request_tile_permission();
#endif
#endif
  return s;
}

}  // namespace

const char* AmxSupport::reason() const {
  if (!cpu_has_amx_int8) return "the CPU has no AMX-INT8";
  if (!os_saves_tiles) return "the OS does not enable the AMX tile state (XCR0)";
  if (!permission) return "the kernel refused arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA)";
  if (!has_vnni) return "no AVX-512 VNNI (the AMX kernels use it for scales and tails)";
  return "";
}

const AmxSupport& amx_support() {
  static const AmxSupport s = detect_amx_support();
  return s;
}

}  // namespace strata
