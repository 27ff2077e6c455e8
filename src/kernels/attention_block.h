// Internal to src/kernels: one step of paged attention's online softmax, the
// unit that has a scalar (attention.cpp) and an AVX2 (attention_avx2.cpp)
// version.
//
// For the `group` query heads that share one KV head, folds `n` consecutive
// positions of one KV block into the running (max, sum, acc) state:
//   s_hj = scale * q_h · k_j;  m' = max(m_h, max_j s_hj);
//   acc_h = acc_h * e^(m_h - m') + sum_j e^(s_hj - m') v_j;  likewise sum_h.
#pragma once

#include <cstdint>

namespace strata {

struct AttendBlockArgs {
  const float* q = nullptr;     // [group][head_dim]
  const uint16_t* k = nullptr;  // position j at k + j * row_stride, fp16 [head_dim]
  const uint16_t* v = nullptr;  // same layout as k
  int64_t row_stride = 0;       // elements between consecutive positions
  int n = 0;                    // positions in this block (1..block_size)
  int group = 0;
  int head_dim = 0;
  float scale = 1.0f;
  float* run_max = nullptr;  // [group]
  float* run_sum = nullptr;  // [group]
  float* acc = nullptr;      // [group][head_dim], unnormalized output
  float* scores = nullptr;   // scratch [block_size]
  float* kv_f32 = nullptr;   // scratch [2][block_size][head_dim]
};

namespace avx2 {
void attend_block(const AttendBlockArgs& a);
}  // namespace avx2

}  // namespace strata
