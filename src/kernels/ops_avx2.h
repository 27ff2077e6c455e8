// Internal to src/kernels: AVX2/FMA versions of the row-wise ops in ops.h
// (ops_avx2.cpp). Call only when kernel_isa() == KernelIsa::kAvx2.
#pragma once

#include <cstdint>

namespace strata::avx2 {

void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t dim, float eps);
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
// Rotates one head: v[i], v[i + half] by (c[i], s[i]) for i < half.
void rope_neox_head(float* v, const float* c, const float* s, int half);

}  // namespace strata::avx2
