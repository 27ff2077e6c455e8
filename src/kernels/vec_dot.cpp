#include "kernels/vec_dot.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant.h"

namespace strata::vec_dot {
namespace {

float dot_f32(const float* w, const float* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += w[i] * x[i];
  return sum;
}

float dot_f16(const uint16_t* w, const uint16_t* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += fp16_to_fp32(w[i]) * fp16_to_fp32(x[i]);
  return sum;
}

float dot_bf16(const uint16_t* w, const uint16_t* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += bf16_to_fp32(w[i]) * bf16_to_fp32(x[i]);
  return sum;
}

float dot_q8_0(const BlockQ8_0* w, const BlockQ8_0* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    int isum = 0;
    for (int j = 0; j < kQK8_0; ++j) isum += w[b].qs[j] * x[b].qs[j];
    sum += static_cast<float>(isum) * (fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d));
  }
  return sum;
}

// Each block's exact integer dot, scaled and accumulated with a fused
// multiply-add (as llama.cpp's repacked Q4_0 kernels round).
float dot_q4_0(const BlockQ4_0* w, const BlockQ8_0* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    int isum = 0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      isum += ((w[b].qs[j] & 0xF) - 8) * x[b].qs[j];
      isum += ((w[b].qs[j] >> 4) - 8) * x[b].qs[j + kQK4_0 / 2];
    }
    sum = std::fma(static_cast<float>(isum), fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d), sum);
  }
  return sum;
}

// Pairs of sub-blocks (64 elements) are summed exactly in integers, then
// scaled and accumulated in fp32 one pair at a time with fused multiply-adds
// (as llama.cpp's repacked Q4_K GEMM, whose rounding this reproduces).
float dot_q4_k(const BlockQ4_K* w, const BlockQ8_K* x, int64_t n) {
  float acc = 0.0f, acc_min = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_fp32(w[b].d) * x[b].d;
    const float dmin = fp16_to_fp32(w[b].dmin) * x[b].d;
    for (int c = 0; c < 4; ++c) {
      const uint8_t* q = w[b].qs + 32 * c;
      const int8_t* a = x[b].qs + 64 * c;
      uint8_t sc0, m0, sc1, m1;
      q4_k_scale_min(w[b].scales, 2 * c, &sc0, &m0);
      q4_k_scale_min(w[b].scales, 2 * c + 1, &sc1, &m1);
      int lo = 0, hi = 0;
      for (int l = 0; l < 32; ++l) {
        lo += (q[l] & 0xF) * a[l];
        hi += (q[l] >> 4) * a[l + 32];
      }
      const int sumi = sc0 * lo + sc1 * hi;
      const int summ = m0 * (x[b].bsums[4 * c] + x[b].bsums[4 * c + 1]) +
                       m1 * (x[b].bsums[4 * c + 2] + x[b].bsums[4 * c + 3]);
      acc = std::fma(static_cast<float>(sumi), d, acc);
      acc_min = std::fma(static_cast<float>(summ), dmin, acc_min);
    }
  }
  return acc - acc_min;
}

float dot_q6_k(const BlockQ6_K* w, const BlockQ8_K* x, int64_t n) {
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    int q[kQK_K];
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = w[b].ql + 64 * h;
      const uint8_t* qh = w[b].qh + 32 * h;
      int* o = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        o[l] = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        o[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        o[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        o[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      }
    }
    int sumi = 0;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int j = 0; j < 16; ++j) s += q[16 * g + j] * x[b].qs[16 * g + j];
      sumi += w[b].scales[g] * s;
    }
    sum += fp16_to_fp32(w[b].d) * x[b].d * static_cast<float>(sumi);
  }
  return sum;
}

// Q8_0 for activations, as llama.cpp's AVX2 quantize_row_q8_0 computes it
// (its weights use the reference quantize_row_q8_0 instead): the inverse
// scale is 127/amax rather than 1/d, and rounding is to nearest even. Either
// difference flips a code now and then, and each flip moves a dot product by
// a whole quantization step.
void encode_q8_0_activation(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* in = x + b * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(in[j]));
    y[b].d = fp32_to_fp16(amax / 127.0f);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < kQK8_0; ++j) y[b].qs[j] = static_cast<int8_t>(std::nearbyint(in[j] * id));
  }
}

}  // namespace

DType activation_type(DType weight_type) {
  switch (weight_type) {
    case DType::kF16:
      return DType::kF16;
    case DType::kBF16:
      return DType::kBF16;
    case DType::kQ8_0:
    case DType::kQ4_0:
      return DType::kQ8_0;
    case DType::kQ4_K:
    case DType::kQ6_K:
      return DType::kQ8_K;
    default:
      return DType::kF32;
  }
}

size_t activation_row_bytes(DType weight_type, int64_t cols) {
  const DType t = activation_type(weight_type);
  // Our Q8_K block carries bsums32 beyond GGUF's 292 bytes (quant.h).
  if (t == DType::kQ8_K) return static_cast<size_t>(cols / kQK_K) * sizeof(BlockQ8_K);
  return dtype_row_bytes(t, cols);
}

void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst) {
  switch (activation_type(weight_type)) {
    case DType::kF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < cols; ++i) h[i] = fp32_to_fp16(x[i]);
      return;
    }
    case DType::kBF16: {
      auto* h = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < cols; ++i) h[i] = fp32_to_bf16(x[i]);
      return;
    }
    case DType::kQ8_0:
      encode_q8_0_activation(x, static_cast<BlockQ8_0*>(dst), cols);
      return;
    case DType::kQ8_K:
      quantize_row_q8_k(x, static_cast<BlockQ8_K*>(dst), cols);
      return;
    default:
      std::memcpy(dst, x, static_cast<size_t>(cols) * sizeof(float));
  }
}

float dot_ref(DType weight_type, const void* w, const void* x, int64_t cols) {
  switch (weight_type) {
    case DType::kF32:
      return dot_f32(static_cast<const float*>(w), static_cast<const float*>(x), cols);
    case DType::kF16:
      return dot_f16(static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(x), cols);
    case DType::kBF16:
      return dot_bf16(static_cast<const uint16_t*>(w), static_cast<const uint16_t*>(x), cols);
    case DType::kQ8_0:
      return dot_q8_0(static_cast<const BlockQ8_0*>(w), static_cast<const BlockQ8_0*>(x), cols);
    case DType::kQ4_0:
      return dot_q4_0(static_cast<const BlockQ4_0*>(w), static_cast<const BlockQ8_0*>(x), cols);
    case DType::kQ4_K:
      return dot_q4_k(static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(x), cols);
    case DType::kQ6_K:
      return dot_q6_k(static_cast<const BlockQ6_K*>(w), static_cast<const BlockQ8_K*>(x), cols);
    default:
      assert(false && "dot_ref: unsupported weight type");
      return 0.0f;
  }
}

}  // namespace strata::vec_dot
