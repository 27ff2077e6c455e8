// CpuFeatures: the instruction-set extensions of the running CPU that strata's
// kernels care about. A plain value, detected once by detect_cpu_features();
// thread-safe (no shared state).
#pragma once

namespace strata {

struct CpuFeatures {
  bool has_avx2 = false;
  bool has_fma = false;
  bool has_f16c = false;

  // All three are needed by the *_avx2.cpp kernels.
  bool can_run_avx2_kernels() const { return has_avx2 && has_fma && has_f16c; }
};

CpuFeatures detect_cpu_features();

}  // namespace strata
