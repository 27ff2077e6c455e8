// Matrix multiplication of activations by a (possibly quantized) weight.
//
// A weight is stored as GGUF stores it: `rows` rows (output features, ne[1])
// of `cols` elements (input features, ne[0]) each, row-major, encoded in
// `type`. matmul computes y[n][rows] = x[n][cols] · Wᵀ for fp32 x and y.
// Decode (small n) takes a GEMV path; prefill and batched decode take a tiled
// GEMM. Quantized types quantize x to 8 bits per block first (as llama.cpp
// does), so results match llama.cpp's to within its own rounding.
// Dispatch between the scalar reference, the AVX2/FMA kernels and (for
// Q4_0/Q8_0 GEMMs of 16+ rows) the AVX-512 VNNI kernels happens once at
// start-up from the detected CPU (kernels/dispatch.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/dtype.h"
#include "util/thread_pool.h"

namespace strata {

struct WeightView {
  DType type = DType::kF32;
  int64_t rows = 0;  // output features
  int64_t cols = 0;  // input features (multiple of the block size)
  const void* data = nullptr;
  size_t row_bytes = 0;  // dtype_row_bytes(type, cols)
};

// y[n][w.rows] = x[n][w.cols] · Wᵀ, using the pool's threads.
void matmul(const WeightView& w, const float* x, int64_t n, float* y, ThreadPool& pool);

// The scalar reference: dequantize-and-dot in double-free plain C++, used by
// parity tests. Quantized types quantize x the same way matmul does.
void matmul_reference(const WeightView& w, const float* x, int64_t n, float* y);

}  // namespace strata
