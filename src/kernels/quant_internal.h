// Per-type scalar quantize/dequantize routines behind quant.h's
// dequantize_row / quantize_rows. Internal to src/kernels.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/quant.h"

namespace strata::quant_internal {

// Round to nearest, ties to even (the default FP environment); deterministic.
inline int nearest_int(float x) {
  return static_cast<int>(std::nearbyint(x));
}

void dequantize_row_q4_k(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_row_q6_k(const BlockQ6_K* x, float* y, int64_t n);
void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t n);
void quantize_row_q6_k(const float* x, BlockQ6_K* y, int64_t n);

}  // namespace strata::quant_internal
