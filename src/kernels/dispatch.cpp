#include "kernels/dispatch.h"

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "util/cpu_features.h"

namespace strata {
namespace {

KernelIsa detect_isa() {
  const CpuFeatures f = detect_cpu_features();
  if (f.can_run_avx512_vnni_kernels()) return KernelIsa::kAvx512Vnni;
  return f.can_run_avx2_kernels() ? KernelIsa::kAvx2 : KernelIsa::kScalar;
}

// STRATA_KERNEL_ISA=scalar|avx2|avx512vnni caps the detected ISA (for
// comparing kernels and reproducing results of smaller CPUs).
KernelIsa initial() {
  const KernelIsa best = detect_isa();
  const char* env = std::getenv("STRATA_KERNEL_ISA");
  if (env == nullptr) return best;
  const std::string_view want(env);
  KernelIsa isa = best;
  if (want == "scalar") isa = KernelIsa::kScalar;
  if (want == "avx2") isa = KernelIsa::kAvx2;
  return static_cast<int>(isa) < static_cast<int>(best) ? isa : best;
}

std::atomic<KernelIsa>& current_isa() {
  static std::atomic<KernelIsa> isa{initial()};
  return isa;
}

}  // namespace

KernelIsa detected_kernel_isa() {
  static const KernelIsa isa = detect_isa();
  return isa;
}

KernelIsa kernel_isa() {
  return current_isa().load(std::memory_order_relaxed);
}

KernelIsa set_kernel_isa(KernelIsa isa) {
  const KernelIsa best = detected_kernel_isa();
  if (isa == KernelIsa::kAvx512Vnni && best != KernelIsa::kAvx512Vnni) isa = KernelIsa::kAvx2;
  if (isa == KernelIsa::kAvx2 && best == KernelIsa::kScalar) isa = KernelIsa::kScalar;
  current_isa().store(isa, std::memory_order_relaxed);
  return isa;
}

const char* kernel_isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
      return "avx512vnni";
    case KernelIsa::kAvx2:
      return "avx2";
    default:
      return "scalar";
  }
}

}  // namespace strata
