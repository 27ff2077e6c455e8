// Q4_K and Q6_K: scalar dequantization (the layout reference) and
// deterministic quantizers with a per-sub-block scale (and min) search.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/fp16.h"
#include "kernels/quant_internal.h"

namespace strata::quant_internal {
namespace {

constexpr int kQ4KSub = 32;  // elements per Q4_K sub-block
constexpr int kQ6KSub = 16;  // elements per Q6_K sub-block

// Fits x[i] ≈ scale * q[i] - min with q in [0, 15], scale >= 0, min >= 0
// (min >= 0 because Q4_K stores it unsigned). Tries several step sizes,
// refits (scale, min) by least squares for each rounding and keeps the one
// with the smallest squared error.
void fit_scale_min_4bit(const float* x, float* scale, float* min) {
  float lo = 0.0f, hi = x[0];
  for (int i = 0; i < kQ4KSub; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (hi <= lo) {
    *scale = 0.0f;
    *min = -lo;
    return;
  }
  float best_err = INFINITY, best_scale = (hi - lo) / 15.0f, best_min = -lo;
  for (int step = -8; step <= 8; ++step) {
    const float inv = (15.0f + 0.125f * static_cast<float>(step)) / (hi - lo);
    float sq = 0, sqq = 0, sqx = 0, sx = 0;
    int q[kQ4KSub];
    for (int i = 0; i < kQ4KSub; ++i) {
      q[i] = std::clamp(nearest_int((x[i] - lo) * inv), 0, 15);
      sq += static_cast<float>(q[i]);
      sqq += static_cast<float>(q[i] * q[i]);
      sqx += static_cast<float>(q[i]) * x[i];
      sx += x[i];
    }
    const float n = static_cast<float>(kQ4KSub);
    const float det = n * sqq - sq * sq;
    if (det <= 0.0f) continue;
    float s = (n * sqx - sq * sx) / det;
    float b = (sx - s * sq) / n;  // x ≈ s*q + b, b = -min
    if (b > 0.0f) {
      b = 0.0f;
      s = sqq > 0.0f ? sqx / sqq : 0.0f;
    }
    if (s < 0.0f) continue;
    float err = 0.0f;
    for (int i = 0; i < kQ4KSub; ++i) {
      const float diff = s * static_cast<float>(q[i]) + b - x[i];
      err += diff * diff;
    }
    if (err < best_err) {
      best_err = err;
      best_scale = s;
      best_min = -b;
    }
  }
  *scale = best_scale;
  *min = best_min;
}

// Fits x[i] ≈ scale * q[i] with q in [-32, 31]; scale may be negative so the
// extreme element can use -32.
float fit_scale_6bit(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < kQ6KSub; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax == 0.0f) return 0.0f;
  static constexpr float kDivisors[] = {-32.0f, -31.5f, -31.0f, -30.5f, -30.0f,
                                        31.0f,  30.5f,  30.0f,  29.5f};
  float best_err = INFINITY, best = max / -32.0f;
  for (float div : kDivisors) {
    const float s0 = max / div;
    int q[kQ6KSub];
    float sqq = 0, sqx = 0;
    for (int i = 0; i < kQ6KSub; ++i) {
      q[i] = std::clamp(nearest_int(x[i] / s0), -32, 31);
      sqq += static_cast<float>(q[i] * q[i]);
      sqx += static_cast<float>(q[i]) * x[i];
    }
    if (sqq == 0.0f) continue;
    const float s = sqx / sqq;
    float err = 0.0f;
    for (int i = 0; i < kQ6KSub; ++i) {
      const float diff = s * static_cast<float>(q[i]) - x[i];
      err += diff * diff;
    }
    if (err < best_err) {
      best_err = err;
      best = s;
    }
  }
  return best;
}

}  // namespace

void dequantize_row_q4_k(const BlockQ4_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    const float dmin = fp16_to_fp32(x[b].dmin);
    float* out = y + b * kQK_K;
    for (int c = 0; c < 4; ++c) {
      uint8_t sc0, m0, sc1, m1;
      q4_k_scale_min(x[b].scales, 2 * c, &sc0, &m0);
      q4_k_scale_min(x[b].scales, 2 * c + 1, &sc1, &m1);
      const uint8_t* q = x[b].qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        out[64 * c + l] = d * sc0 * static_cast<float>(q[l] & 0xF) - dmin * m0;
        out[64 * c + 32 + l] = d * sc1 * static_cast<float>(q[l] >> 4) - dmin * m1;
      }
    }
  }
}

void dequantize_row_q6_k(const BlockQ6_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = fp16_to_fp32(x[b].d);
    float* out = y + b * kQK_K;
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = x[b].ql + 64 * h;
      const uint8_t* qh = x[b].qh + 32 * h;
      const int8_t* sc = x[b].scales + 8 * h;
      float* o = out + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q0 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q1 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        o[l] = d * sc[is + 0] * static_cast<float>(q0);
        o[l + 32] = d * sc[is + 2] * static_cast<float>(q1);
        o[l + 64] = d * sc[is + 4] * static_cast<float>(q2);
        o[l + 96] = d * sc[is + 6] * static_cast<float>(q3);
      }
    }
  }
}

void quantize_row_q4_k(const float* x, BlockQ4_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* in = x + b * kQK_K;
    float scales[8], mins[8];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      fit_scale_min_4bit(in + kQ4KSub * j, &scales[j], &mins[j]);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    BlockQ4_K& blk = y[b];
    std::memset(&blk, 0, sizeof(blk));
    blk.d = fp32_to_fp16(max_scale / 63.0f);
    blk.dmin = fp32_to_fp16(max_min / 63.0f);
    const float d = fp16_to_fp32(blk.d);
    const float dmin = fp16_to_fp32(blk.dmin);
    uint8_t sc[8], m[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<uint8_t>(d > 0.0f ? std::clamp(nearest_int(scales[j] / d), 0, 63) : 0);
      m[j] = static_cast<uint8_t>(dmin > 0.0f ? std::clamp(nearest_int(mins[j] / dmin), 0, 63) : 0);
      if (j < 4) {
        blk.scales[j] = sc[j];
        blk.scales[j + 4] = m[j];
      } else {
        blk.scales[j + 4] = static_cast<uint8_t>((sc[j] & 0xF) | ((m[j] & 0xF) << 4));
        blk.scales[j - 4] |= static_cast<uint8_t>((sc[j] >> 4) << 6);
        blk.scales[j] |= static_cast<uint8_t>((m[j] >> 4) << 6);
      }
    }
    uint8_t q[kQK_K];
    for (int j = 0; j < 8; ++j) {
      const float ds = d * sc[j];
      const float dm = dmin * m[j];
      for (int i = 0; i < kQ4KSub; ++i) {
        const float v = in[kQ4KSub * j + i];
        q[kQ4KSub * j + i] =
            static_cast<uint8_t>(ds > 0.0f ? std::clamp(nearest_int((v + dm) / ds), 0, 15) : 0);
      }
    }
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        blk.qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
      }
    }
  }
}

void quantize_row_q6_k(const float* x, BlockQ6_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float* in = x + b * kQK_K;
    float scales[16];
    float amax = 0.0f;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_scale_6bit(in + kQ6KSub * j);
      amax = std::max(amax, std::fabs(scales[j]));
    }
    BlockQ6_K& blk = y[b];
    std::memset(&blk, 0, sizeof(blk));
    blk.d = fp32_to_fp16(amax / 127.0f);
    const float d = fp16_to_fp32(blk.d);
    uint8_t q[kQK_K];  // biased by 32: 0..63
    for (int j = 0; j < 16; ++j) {
      const int sc = d > 0.0f ? std::clamp(nearest_int(scales[j] / d), -128, 127) : 0;
      blk.scales[j] = static_cast<int8_t>(sc);
      const float ds = d * static_cast<float>(sc);
      for (int i = 0; i < kQ6KSub; ++i) {
        const float v = in[kQ6KSub * j + i];
        const int qi = ds != 0.0f ? std::clamp(nearest_int(v / ds), -32, 31) : 0;
        q[kQ6KSub * j + i] = static_cast<uint8_t>(qi + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const uint8_t* qq = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const uint8_t q0 = qq[l], q1 = qq[l + 32], q2 = qq[l + 64], q3 = qq[l + 96];
        blk.ql[64 * h + l] = static_cast<uint8_t>((q0 & 0xF) | ((q2 & 0xF) << 4));
        blk.ql[64 * h + l + 32] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        blk.qh[32 * h + l] = static_cast<uint8_t>((q0 >> 4) | ((q1 >> 4) << 2) | ((q2 >> 4) << 4) |
                                                  ((q3 >> 4) << 6));
      }
    }
  }
}

}  // namespace strata::quant_internal
