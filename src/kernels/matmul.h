// Matrix multiplication of activations by a (possibly quantized) weight.
//
// A weight is stored as GGUF stores it: `rows` rows (output features, ne[1])
// of `cols` elements (input features, ne[0]) each, row-major, encoded in
// `type`. matmul computes y[n][rows] = x[n][cols] · Wᵀ for fp32 x and y.
// Quantized types quantize x to 8 bits per block first (as llama.cpp does),
// so results match llama.cpp's to within its own rounding. One kernel family
// per weight type serves every n (decode, batched decode, prefill chunks),
// chosen once at start-up from the detected CPU (kernels/dispatch.h): the
// scalar reference, AVX2/FMA, or AVX-512 (VNNI int8 for Q4_0/Q8_0, which
// also reads the kTiled16 layout below; Q4_K/Q6_K; F32/F16/BF16). So a
// token's outputs never depend on the batch it is in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "util/dtype.h"
#include "util/thread_pool.h"

namespace strata {

// How a weight's bytes are ordered.
//   kGguf:    `rows` rows of dtype_row_bytes(type, cols) bytes, as GGUF
//             stores them.
//   kTiled16: this CPU's int8 kernel's own order, built once at load time by
//             PackedWeight (kernels/packed_weight.h): 16 rows interleaved per
//             tile so that the kernel reads one sequential stream and never
//             transposes. Same size as kGguf, same results bit for bit.
enum class WeightLayout : uint8_t { kGguf, kTiled16 };

struct WeightView {
  DType type = DType::kF32;
  int64_t rows = 0;  // output features
  int64_t cols = 0;  // input features (multiple of the block size)
  const void* data = nullptr;
  size_t row_bytes = 0;  // dtype_row_bytes(type, cols); the bytes per row in either layout
  WeightLayout layout = WeightLayout::kGguf;
};

// y[n][w.rows] = x[n][w.cols] · Wᵀ, using the pool's threads.
void matmul(const WeightView& w, const float* x, int64_t n, float* y, ThreadPool& pool);

// One weight of matmul_group and its output.
struct MatmulTarget {
  const WeightView* w;
  float* y;
};

// matmul(*t.w, x, n, t.y, pool) for every target: weights of one width
// reading the same input (q/k/v, gate/up). One pass over the pool with the
// activations encoded once when the targets share a weight type and the
// kernel their shape and n pick; otherwise one matmul after another. Each
// output's bits are matmul's either way.
void matmul_group(std::initializer_list<MatmulTarget> targets, const float* x, int64_t n,
                  ThreadPool& pool);

// The scalar reference: dequantize-and-dot in double-free plain C++, used by
// parity tests. Quantized types quantize x the same way matmul does.
// w must be in the kGguf layout.
void matmul_reference(const WeightView& w, const float* x, int64_t n, float* y);

}  // namespace strata
