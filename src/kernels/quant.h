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
//   Q8_K: 256 elems, {f32 d; int8 qs[256]; int16 bsums[16]; int16 bsums32[8]}
//         (activations only; llama.cpp's block_q8_K plus bsums32)
//
// Element order inside the K-quant blocks (element e of the 256):
//   Q4_K: chunk c = e / 64 uses qs[32c .. 32c+31]; e % 64 < 32 takes the low
//         nibble of qs[32c + e % 32], otherwise the high nibble. Sub-block
//         j = e / 32 has scale/min q4_k_scale_min(scales, j): for j < 4 the
//         low 6 bits of scales[j] / scales[j+4]; for j >= 4 the nibbles of
//         scales[j+4] plus the top 2 bits of scales[j-4] / scales[j].
//   Q6_K: half h = e / 128, l = e % 32, k = (e % 128) / 32 (0..3). The low
//         4 bits come from ql[64h + l + 32*(k & 1)] (low nibble for k < 2,
//         high nibble for k >= 2); the high 2 bits are bits 2k..2k+1 of
//         qh[32h + l]. Scale: scales[e / 16].
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
  // bsums32[k] = bsums[2k] + bsums[2k + 1], the sum of Q4_K sub-block k's
  // 32 codes: one 32-bit load is the pair (k = 2c, 2c + 1) that a Q4_K
  // kernel multiplies by the mins (m_2c, m_2c+1) with one vpdpwssd.
  int16_t bsums32[kQK_K / 32];
};
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 308);  // GGUF's q8_K is 292: no bsums32

// Decodes one row of `n` elements of type `t` (F32, F16, BF16, Q8_0, Q4_0,
// Q4_K, Q6_K) to floats. n must be a multiple of the block size.
void dequantize_row(DType t, const void* src, float* dst, int64_t n);

// Encodes `rows` rows of `cols` floats into type `t` (the same set). Scalar
// and deterministic: the same input gives the same bytes on every machine.
std::vector<uint8_t> quantize_rows(DType t, const float* src, int64_t rows, int64_t cols);

// Reference quantizers (n a multiple of the block size). Q8_0: d = amax/127
// stored as f16, q = round(x/d) (half away from zero), the weight encoding
// (matmul encodes Q8_0 activations as llama.cpp's AVX2 path does, see
// vec_dot.cpp). Q8_K (activations): d = amax/127 in f32, q = nearest(x/d),
// bsums[g] = sum of qs[16g .. 16g+15], bsums32 their pair sums; the same codes as llama.cpp's,
// which scales by -127/max (signed), up to a sign.
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n);

// Unpacks the 6-bit scale and min of sub-block j (0..7) of a Q4_K block.
inline void q4_k_scale_min(const uint8_t* scales, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

}  // namespace strata
