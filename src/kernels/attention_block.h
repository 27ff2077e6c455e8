// Internal to src/kernels: the steps of paged attention below the public
// entry point, per ISA: scalar (attention.cpp), AVX2 (attention_avx2.cpp)
// and AVX-512 (attention_avx512.cpp).
//
// For the `group` query heads that share one KV head, attention runs in two
// passes over the sequence's KV blocks, as llama.cpp's non-flash CPU path
// computes it (softmax(scale · K·q) then V·p, both matmuls over fp16):
//   1. scores:  s_hj = scale * (q_h · k_j), q_h rounded to fp16, the dot an
//               fp32 FMA chain over i = 0..head_dim-1 in that order, from 0
//               (the AVX2 step sums 8 partial chains instead);
//   (softmax_weights over the whole row: p_hj = fp16(e^(s_hj - m_h) / sum_h))
//   2. values:  acc_h[i] = fma(p_hj, v_ji, acc_h[i]) for j = 0..pos in order.
// Each output value depends only on its own token's row, never on which
// other tokens or heads are computed alongside it: that is what keeps the
// results batch-invariant.
#pragma once

#include <cstdint>

namespace strata {

// One KV block's worth of work for the scalar and AVX2 steps.
struct AttendBlockArgs {
  const float* q = nullptr;  // [group][head_dim], values exactly representable in fp16
  // The block's rows of one KV head: position j at k + j * head_dim, fp16
  // [head_dim] (a KV head's slots are contiguous within a block).
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;  // same layout as k
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

// A tile for the AVX-512 path: num_tokens consecutive batch tokens of one
// sequence at consecutive positions (a prefill chunk, or a single token),
// times the `group` query heads of one KV head. Every K block is converted
// and transposed once for the whole tile and every V block converted once.
struct AttendTileArgs {
  const float* q = nullptr;   // row (token t, head h) at q + t * token_stride + h * head_dim
  float* out = nullptr;       // same layout as q
  int64_t token_stride = 0;   // n_heads * head_dim
  int num_tokens = 0;         // >= 1
  int64_t first_num_pos = 0;  // token t attends positions [0, first_num_pos + t)
  const int32_t* block_table = nullptr;  // the sequence's physical block ids
  // The KV head's rows in physical block 0 (kv_row_offset(kv, 0, g)): slot j
  // of block b at k + b * block_stride + j * head_dim.
  const uint16_t* k = nullptr;
  const uint16_t* v = nullptr;
  int64_t block_stride = 0;  // elements between consecutive physical blocks
  int block_size = 16;
  int group = 0;
  int head_dim = 0;
  float scale = 1.0f;
  // The tile the same thread runs next, if any: its first K rows are
  // prefetched near the end of this one. Never changes any result.
  const AttendTileArgs* next = nullptr;
};

// Turns one row of n scores into softmax weights in place, each rounded to
// fp16 (as llama.cpp converts them before the V product): subtract the max,
// exp, sum in double, multiply by the fp32 reciprocal of the sum.
void softmax_weights_scalar(float* s, int64_t n);

namespace avx2 {
void score_block(const AttendBlockArgs& a);
void accumulate_block(const AttendBlockArgs& a);
// The vector softmax: exps summed 8 at a time in fp32 (a fixed tree), the
// partial sums added to a double in position order.
void softmax_weights(float* s, int64_t n);
// dst[i] = fp16-rounded src[i], n elements.
void round_to_fp16(const float* src, float* dst, int64_t n);
// dst[i] = the fp16 bits of src[i] (F16C, round to nearest even): the bits
// of fp32_to_fp16 for every input, NaNs included (quieted, sign and top
// payload bits kept).
void fp32_to_fp16_row(const float* src, uint16_t* dst, int64_t n);
}  // namespace avx2

namespace avx512 {
// Whether the AVX-512 path handles this head size (a multiple of 16).
bool attention_supports(int head_dim);
// Both passes for one tile; writes the tile's outputs, bit for bit what
// running each token alone (a tile of one) gives.
void attend_tile(const AttendTileArgs& a);
// Asks for the first K rows of a tile ahead of attend_tile (for a thread's
// first tile; later ones are asked for by their predecessor).
void prefetch_tile_start(const AttendTileArgs& a);
// avx2::softmax_weights with 16-wide exps, same bits, for `rows` rows of n
// scores each at s + r * stride, interleaved so the double sums overlap.
void softmax_weights_rows(float* s, int64_t stride, int rows, int64_t n);
}  // namespace avx512

}  // namespace strata
