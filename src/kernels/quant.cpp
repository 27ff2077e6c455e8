#include "kernels/quant.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant_internal.h"

namespace strata {

using quant_internal::nearest_int;

namespace {

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    for (int j = 0; j < kQK8_0; ++j) y[b * kQK8_0 + j] = d * static_cast<float>(x[b].qs[j]);
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    float* out = y + b * kQK4_0;
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      out[j] = d * static_cast<float>((x[b].qs[j] & 0xF) - 8);
      out[j + kQK4_0 / 2] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

// The largest-magnitude element, with its sign.
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK4_0; ++b) {
    const float* in = x + b * kQK4_0;
    // The extreme element maps to q = 0 (value -8*d), so the full range
    // [-8, 7] is used on the side of the largest magnitude.
    const float d = signed_absmax(in, kQK4_0) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const int q0 = std::clamp(nearest_int(in[j] * id) + 8, 0, 15);
      const int q1 = std::clamp(nearest_int(in[j + kQK4_0 / 2] * id) + 8, 0, 15);
      y[b].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

}  // namespace

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK8_0; ++b) {
    const float* in = x + b * kQK8_0;
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::max(amax, std::fabs(in[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = fp32_to_fp16(d);
    for (int j = 0; j < kQK8_0; ++j) y[b].qs[j] = static_cast<int8_t>(std::round(in[j] * id));
  }
}

void quantize_row_q8_k(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* in = x + b * kQK_K;
    float amax = 0.0f;
    for (int j = 0; j < kQK_K; ++j) amax = std::max(amax, std::fabs(in[j]));
    if (amax == 0.0f) {
      std::memset(&y[b], 0, sizeof(BlockQ8_K));
      continue;
    }
    const float iscale = 127.0f / amax;
    for (int j = 0; j < kQK_K; ++j) {
      y[b].qs[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * in[j])));
    }
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += y[b].qs[16 * g + j];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    for (int k = 0; k < kQK_K / 32; ++k) {
      y[b].bsums32[k] = static_cast<int16_t>(y[b].bsums[2 * k] + y[b].bsums[2 * k + 1]);
    }
    y[b].d = 1.0f / iscale;
  }
}

void dequantize_row(DType t, const void* src, float* dst, int64_t n) {
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(h[i]);
      return;
    }
    case DType::kBF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(h[i]);
      return;
    }
    case DType::kQ8_0:
      dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n);
      return;
    case DType::kQ4_0:
      dequantize_row_q4_0(static_cast<const BlockQ4_0*>(src), dst, n);
      return;
    case DType::kQ4_K:
      quant_internal::dequantize_row_q4_k(static_cast<const BlockQ4_K*>(src), dst, n);
      return;
    case DType::kQ6_K:
      quant_internal::dequantize_row_q6_k(static_cast<const BlockQ6_K*>(src), dst, n);
      return;
    default:
      // Unsupported types are rejected when a model is loaded (DTypeTraits::
      // is_supported); reaching here is a programming error.
      assert(false && "dequantize_row: unsupported type");
      std::memset(dst, 0, static_cast<size_t>(n) * sizeof(float));
  }
}

std::vector<uint8_t> quantize_rows(DType t, const float* src, int64_t rows, int64_t cols) {
  const size_t row_bytes = dtype_row_bytes(t, cols);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = src + r * cols;
    uint8_t* y = out.data() + static_cast<size_t>(r) * row_bytes;
    switch (t) {
      case DType::kF32:
        std::memcpy(y, x, row_bytes);
        break;
      case DType::kF16:
        for (int64_t i = 0; i < cols; ++i) {
          const uint16_t h = fp32_to_fp16(x[i]);
          std::memcpy(y + 2 * i, &h, 2);
        }
        break;
      case DType::kBF16:
        for (int64_t i = 0; i < cols; ++i) {
          const uint16_t h = fp32_to_bf16(x[i]);
          std::memcpy(y + 2 * i, &h, 2);
        }
        break;
      case DType::kQ8_0:
        quantize_row_q8_0(x, reinterpret_cast<BlockQ8_0*>(y), cols);
        break;
      case DType::kQ4_0:
        quantize_row_q4_0(x, reinterpret_cast<BlockQ4_0*>(y), cols);
        break;
      case DType::kQ4_K:
        quant_internal::quantize_row_q4_k(x, reinterpret_cast<BlockQ4_K*>(y), cols);
        break;
      case DType::kQ6_K:
        quant_internal::quantize_row_q6_k(x, reinterpret_cast<BlockQ6_K*>(y), cols);
        break;
      default:
        assert(false && "quantize_rows: unsupported type");
        return {};
    }
  }
  return out;
}

}  // namespace strata
