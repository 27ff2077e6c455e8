// Scalar IEEE half and bfloat16 conversions (round-to-nearest-even), the
// reference for every vectorized conversion.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata {

float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);

inline float bf16_to_fp32(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t fp32_to_bf16(float f);  // round-to-nearest-even, NaN kept quiet

}  // namespace strata
