// Internal to src/kernels: the two per-block steps of paged attention, each
// with a scalar (attention.cpp), an AVX2 (attention_avx2.cpp) and an
// AVX-512 (attention_avx512.cpp) version.
//
// For the `group` query heads that share one KV head, attention runs in two
// passes over the sequence's KV blocks, as llama.cpp's non-flash CPU path
// computes it (softmax(scale · K·q) then V·p, both matmuls over fp16):
//   1. score_block:      s_hj = scale * (q_h · k_j), q_h already rounded to
//                        fp16, dot in fp32;
//   (softmax_weights over the whole row: p_hj = fp16(e^(s_hj - m_h) / sum_h))
//   2. accumulate_block: acc_h += sum_j p_hj v_j in fp32.
#pragma once

#include <cstdint>

namespace strata {

struct AttendBlockArgs {
  const float* q = nullptr;     // [group][head_dim], values exactly representable in fp16
  const uint16_t* k = nullptr;  // position j at k + j * row_stride, fp16 [head_dim]
  const uint16_t* v = nullptr;  // same layout as k
  int64_t row_stride = 0;       // elements between consecutive positions
  int n = 0;                    // positions in this block (1..block_size)
  int group = 0;
  int head_dim = 0;
  float scale = 1.0f;
  // Scores (pass 1 output) / fp16-rounded weights (pass 2 input) of this
  // block: head h, position j at scores[h * score_stride + j].
  float* scores = nullptr;
  int64_t score_stride = 0;
  float* acc = nullptr;     // [group][head_dim], pass 2 accumulates into it
  float* kv_f32 = nullptr;  // scratch [block_size][head_dim]
};

// Turns one row of n scores into softmax weights in place, each rounded to
// fp16 (as llama.cpp converts them before the V product): subtract the max,
// exp, sum in double, multiply by the fp32 reciprocal of the sum.
void softmax_weights_scalar(float* s, int64_t n);

namespace avx2 {
void score_block(const AttendBlockArgs& a);
void accumulate_block(const AttendBlockArgs& a);
void softmax_weights(float* s, int64_t n);
// dst[i] = fp16-rounded src[i], n elements.
void round_to_fp16(const float* src, float* dst, int64_t n);
}  // namespace avx2

namespace avx512 {
// Whether the AVX-512 steps handle this head size (a multiple of 16).
bool attention_supports(int head_dim);
void score_block(const AttendBlockArgs& a);
void accumulate_block(const AttendBlockArgs& a);
}  // namespace avx512

}  // namespace strata
