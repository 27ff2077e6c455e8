// CpuFeatures: the instruction-set extensions of the running CPU that strata's
// kernels care about. A plain value, detected once by detect_cpu_features();
// thread-safe (no shared state).
#pragma once

namespace strata {

struct CpuFeatures {
  bool has_avx2 = false;
  bool has_fma = false;
  bool has_f16c = false;
  bool has_avx512f = false;
  bool has_avx512bw = false;
  bool has_avx512vl = false;
  bool has_avx512vnni = false;

  // All three are needed by the *_avx2.cpp kernels.
  bool can_run_avx2_kernels() const { return has_avx2 && has_fma && has_f16c; }
  // The *_avx512.cpp kernels need these on top of the AVX2 set.
  bool can_run_avx512_vnni_kernels() const {
    return can_run_avx2_kernels() && has_avx512f && has_avx512bw && has_avx512vl && has_avx512vnni;
  }
};

CpuFeatures detect_cpu_features();

}  // namespace strata
