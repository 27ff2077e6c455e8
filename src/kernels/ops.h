// Elementwise and row-wise kernels of the transformer block. Each has a
// scalar reference (namespace ref) and an optimized version; the optimized
// ones are chosen at start-up (kernels/dispatch.h).
#pragma once

#include <cstdint>

#include "util/thread_pool.h"

namespace strata {

enum class RopeStyle {
  kNormal,  // rotate adjacent pairs (x[2i], x[2i+1]) — llama
  kNeox,    // rotate halves (x[i], x[i + rot_dim/2]) — qwen2, qwen3
};

struct RopeParams {
  RopeStyle style = RopeStyle::kNormal;
  int head_dim = 0;
  int rot_dim = 0;  // dims rotated (≤ head_dim), usually head_dim
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // linear scaling: position * freq_scale
};

// y[r] = x[r] / rms(x[r]) * w, for n_rows rows of dim elements (w may be
// nullptr for no weight). y may alias x.
void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t dim, float eps);

// The rotation of each pair for one position: cos_out, sin_out [rot_dim / 2],
// angle_i = position * freq_scale * freq_base^(-2i / rot_dim) in fp32, the
// power built by repeated multiplication (as llama.cpp, for bit-close logits).
void rope_cos_sin(int32_t position, const RopeParams& p, float* cos_out, float* sin_out);

// Rotates x in place: x is [n_tokens][n_heads][head_dim]; token t has
// position positions[t].
void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, const RopeParams& p);

// out[i] = silu(gate[i]) * up[i]; out may alias gate.
void silu_mul(const float* gate, const float* up, float* out, int64_t n);

// x[r][i] += b[i] for n_rows rows.
void add_bias(float* x, const float* b, int64_t n_rows, int64_t dim);

// y[i] = x[i] + y[i]
void add_inplace(float* y, const float* x, int64_t n);

namespace ref {
void rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t dim, float eps);
void rope(float* x, const int32_t* positions, int64_t n_tokens, int n_heads, const RopeParams& p);
void silu_mul(const float* gate, const float* up, float* out, int64_t n);
}  // namespace ref

}  // namespace strata
