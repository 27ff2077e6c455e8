#include "kernels/dispatch.h"

#include <atomic>

#include "util/cpu_features.h"

namespace strata {
namespace {

KernelIsa detect() {
  return detect_cpu_features().can_run_avx2_kernels() ? KernelIsa::kAvx2 : KernelIsa::kScalar;
}

std::atomic<KernelIsa>& current_isa() {
  static std::atomic<KernelIsa> isa{detect()};
  return isa;
}

}  // namespace

KernelIsa detected_kernel_isa() {
  static const KernelIsa isa = detect();
  return isa;
}

KernelIsa kernel_isa() {
  return current_isa().load(std::memory_order_relaxed);
}

KernelIsa set_kernel_isa(KernelIsa isa) {
  if (isa == KernelIsa::kAvx2 && detected_kernel_isa() != KernelIsa::kAvx2) {
    isa = KernelIsa::kScalar;
  }
  current_isa().store(isa, std::memory_order_relaxed);
  return isa;
}

const char* kernel_isa_name(KernelIsa isa) {
  return isa == KernelIsa::kAvx2 ? "avx2" : "scalar";
}

}  // namespace strata
