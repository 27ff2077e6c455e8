// Shared helpers of the kernel tests: deterministic random data and an RAII
// guard that forces a kernel ISA for one test.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/dispatch.h"

namespace strata::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  // Sum of uniforms: bell-shaped with an occasional larger outlier.
  for (auto& x : v) x = scale * (dist(rng) + dist(rng) + dist(rng) * dist(rng) * 2.0f);
  return v;
}

class ScopedIsa {
 public:
  explicit ScopedIsa(KernelIsa isa) : previous_(kernel_isa()) { actual_ = set_kernel_isa(isa); }
  ~ScopedIsa() { set_kernel_isa(previous_); }
  KernelIsa actual() const { return actual_; }

 private:
  KernelIsa previous_;
  KernelIsa actual_;
};

// Every ISA this CPU can run: scalar, then AVX2, then AVX-512 VNNI.
inline std::vector<KernelIsa> isas_to_test() {
  std::vector<KernelIsa> isas = {KernelIsa::kScalar};
  const KernelIsa best = detected_kernel_isa();
  if (kernel_isa_has_avx2(best)) isas.push_back(KernelIsa::kAvx2);
  if (best == KernelIsa::kAvx512Vnni) isas.push_back(KernelIsa::kAvx512Vnni);
  return isas;
}

}  // namespace strata::testing
