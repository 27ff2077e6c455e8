// Block layouts of GGUF's quantized types, byte-exact with GGML, and their
// scalar reference quantize/dequantize routines.
//
//   Q8_0: 32 elems, {f16 d; int8 qs[32]}                     x = d * q
//   Q4_0: 32 elems, {f16 d; uint8 qs[16]}  low nibbles hold elems 0..15,
//         high nibbles elems 16..31                          x = d * (q - 8)
//   Q4_K: 256 elems in 8 sub-blocks of 32, {f16 d; f16 dmin; uint8
//         scales[12] (6-bit scale+min per sub-block, packed); uint8 qs[128]}
//                                                            x = d*sc*q - dmin*m
//   Q6_K: 256 elems in 16 sub-blocks of 16, {uint8 ql[128]; uint8 qh[64];
//         int8 scales[16]; f16 d}                            x = d*sc*(q - 32)
//   Q8_K: 256 elems, {f32 d; int8 qs[256]; int16 bsums[16]} (activations only)
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/dtype.h"

namespace strata {

constexpr int kQK8_0 = 32;
constexpr int kQK4_0 = 32;
constexpr int kQK_K = 256;
constexpr int kKScaleBytes = 12;

struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

// Decodes one row of `n` elements of type `t` (F32, F16, BF16, Q8_0, Q4_0,
// Q4_K, Q6_K) to floats. n must be a multiple of the block size.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);

// Encodes `rows` rows of `cols` floats into type `t` (the same set). Scalar
// and deterministic: the same input gives the same bytes on every machine.
std::vector<uint8_t> quantize_rows(DType t, const float* src, int64_t rows, int64_t cols);

}  // namespace strata
