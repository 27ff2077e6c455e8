// Shared helpers of the kernel tests: deterministic random data, weights
// quantized from it, reference dot orders and RAII guards that force a
// kernel ISA or AMX mode for one test.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/matmul_unit.h"
#include "kernels/quant.h"

namespace strata::testing {

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  // Sum of uniforms: bell-shaped with an occasional larger outlier.
  for (auto& x : v) x = scale * (dist(rng) + dist(rng) + dist(rng) * dist(rng) * 2.0f);
  return v;
}

class ScopedIsa {
 public:
  explicit ScopedIsa(KernelIsa isa) : previous_(kernel_isa()) { actual_ = set_kernel_isa(isa); }
  ~ScopedIsa() { set_kernel_isa(previous_); }
  KernelIsa actual() const { return actual_; }

 private:
  KernelIsa previous_;
  KernelIsa actual_;
};

// Every ISA this CPU can run: scalar, then AVX2, then AVX-512 VNNI.
inline std::vector<KernelIsa> isas_to_test() {
  std::vector<KernelIsa> isas = {KernelIsa::kScalar};
  const KernelIsa best = detected_kernel_isa();
  if (kernel_isa_has_avx2(best)) isas.push_back(KernelIsa::kAvx2);
  if (best == KernelIsa::kAvx512Vnni) isas.push_back(KernelIsa::kAvx512Vnni);
  return isas;
}

// Forces the AMX mode for one test.
class ScopedAmxMode {
 public:
  explicit ScopedAmxMode(AmxMode mode) : previous_(amx_mode()) { set_amx_mode(mode); }
  ~ScopedAmxMode() { set_amx_mode(previous_); }

 private:
  AmxMode previous_;
};

inline bool has_vnni() {
  return detected_kernel_isa() == KernelIsa::kAvx512Vnni;
}

// A quantized weight and its dequantized values.
struct DequantWeight {
  std::vector<uint8_t> bytes;
  std::vector<float> dequant;  // [rows][cols]
  WeightView view;
};

inline DequantWeight make_dequant_weight(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  DequantWeight w;
  const auto src = random_floats(rows * cols, seed, 0.1f);
  w.bytes = quantize_rows(t, src.data(), rows, cols);
  w.view = {t, rows, cols, w.bytes.data(), dtype_row_bytes(t, cols)};
  w.dequant.resize(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    dequantize_row(t, w.bytes.data() + r * w.view.row_bytes, w.dequant.data() + r * cols, cols);
  }
  return w;
}

struct KQuantWeight {
  std::vector<uint8_t> bytes;
  WeightView view;
};

// Random Q4_K or Q6_K weights plus extreme blocks: Q4_K row 0 block 0 with
// every nibble 15 and every scale and min 63, the last row's block 0 with
// nibbles 0; Q6_K row 0 block 0 with quants 63 (q - 32 = 31) and scales
// -128, the last row's block 0 with quants 0 (-32) and scales 127 (p = -4064
// and 4096, the ends of the split weight's range).
inline KQuantWeight make_kquant_weight(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  KQuantWeight w;
  const auto src = random_floats(rows * cols, seed, 0.1f);
  w.bytes = quantize_rows(t, src.data(), rows, cols);
  const size_t row_bytes = dtype_row_bytes(t, cols);
  uint8_t* first = w.bytes.data();
  uint8_t* last = w.bytes.data() + (rows - 1) * row_bytes;
  if (t == DType::kQ4_K) {
    auto* b0 = reinterpret_cast<BlockQ4_K*>(first);
    std::memset(b0->qs, 0xFF, sizeof(b0->qs));
    std::memset(b0->scales, 0xFF, sizeof(b0->scales));
    if (rows > 1) std::memset(reinterpret_cast<BlockQ4_K*>(last)->qs, 0x00, 128);
  } else {
    auto* b0 = reinterpret_cast<BlockQ6_K*>(first);
    std::memset(b0->ql, 0xFF, sizeof(b0->ql));
    std::memset(b0->qh, 0xFF, sizeof(b0->qh));
    std::memset(b0->scales, 0x80, sizeof(b0->scales));
    if (rows > 1) {
      auto* bl = reinterpret_cast<BlockQ6_K*>(last);
      std::memset(bl->ql, 0x00, sizeof(bl->ql));
      std::memset(bl->qh, 0x00, sizeof(bl->qh));
      std::memset(bl->scales, 0x7F, sizeof(bl->scales));
    }
  }
  w.view = {t, rows, cols, w.bytes.data(), row_bytes};
  return w;
}

// n rows of activations for the K-quant kernels, with a block whose absmax
// quantizes to +127 and (n > 1) one to -127.
inline std::vector<float> make_kquant_x(int64_t n, int64_t cols, uint32_t seed) {
  auto x = random_floats(n * cols, seed);
  x[0] = 5.0f;
  if (n > 1) x[cols + 1] = -5.0f;
  return x;
}

// The Q8_0 rounding order in scalar code: exact block dots, then
// acc = fma(isum, d_w * d_x, acc) in block order.
inline float q8_0_dot_fma_order(const BlockQ8_0* w, const BlockQ8_0* x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < kQK8_0; ++j) isum += w[b].qs[j] * x[b].qs[j];
    acc = std::fma(static_cast<float>(isum), fp16_to_fp32(w[b].d) * fp16_to_fp32(x[b].d), acc);
  }
  return acc;
}

}  // namespace strata::testing
