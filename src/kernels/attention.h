// Paged causal attention over a KV cache laid out in fixed-size blocks.
//
// KV layout per layer: K and V each [num_blocks][n_kv_heads][block_size]
// [head_dim] in fp16: within a block, one KV head's slots are contiguous (as
// vLLM lays out its paged cache), so a thread attending with one KV head
// streams whole runs of block_size * head_dim values instead of one row in
// every n_kv_heads. A sequence's block table maps its logical block i to a
// physical block id; token position p lives at slot table[p / block_size] *
// block_size + p % block_size (kv_row_offset).
//
// The batch is flat: token t belongs to sequence seq[t] at position pos[t]
// and attends to positions [0, pos[t]] of that sequence (its own K/V must
// already be written, see write_kv). Two passes per (token, KV head): all
// scores, then softmax and the weighted sum of V; the query heads of one KV
// head group (and, on AVX-512, the tokens of a prefill chunk) are processed
// together so each K/V row is converted once for all of them.
#pragma once

#include <cstdint>

#include "util/thread_pool.h"

namespace strata {

struct KvLayerView {
  uint16_t* k = nullptr;  // [num_blocks][n_kv_heads][block_size][head_dim] fp16
  uint16_t* v = nullptr;
  int64_t num_blocks = 0;
  int block_size = 16;
  int n_kv_heads = 0;
  int head_dim = 0;
};

// Where (slot, KV head)'s head_dim values start in a layer's K or V pool, in
// elements.
inline int64_t kv_row_offset(const KvLayerView& kv, int64_t slot, int head) {
  const int64_t block = slot / kv.block_size, offset = slot % kv.block_size;
  return ((block * kv.n_kv_heads + head) * kv.block_size + offset) * kv.head_dim;
}

struct AttentionBatch {
  int64_t n_tokens = 0;
  const int32_t* pos = nullptr;                  // [n_tokens]
  const int32_t* seq = nullptr;                  // [n_tokens] index into block_tables
  const int32_t* const* block_tables = nullptr;  // [n_seqs] -> physical block ids
};

// Stores k, v ([n_tokens][n_kv_heads][head_dim] fp32) at the given slots
// (slot = block * block_size + offset), rounded to fp16. A negative slot
// marks a padding token: nothing is stored for it. Every ISA stores the
// bits of fp32_to_fp16 (kernels/fp16.h).
void write_kv(const KvLayerView& kv, const float* k, const float* v, const int32_t* slots,
              int64_t n_tokens);

// out, q: [n_tokens][n_heads][head_dim]. scale is usually 1/sqrt(head_dim).
// n_heads must be a multiple of kv.n_kv_heads (GQA groups). The numerics
// follow llama.cpp's non-flash CPU attention: q is rounded to fp16 for K·q;
// the softmax weights (max subtracted, exp, sum in double) are normalized
// and rounded to fp16 before the V product; dot products and accumulators
// are fp32, each in a fixed order per output value.
//
// Work: on AVX-512, consecutive batch tokens of one sequence at consecutive
// positions (a prefill chunk) are processed as tiles of up to 16 tokens per
// KV head, so each K/V block is converted once per tile; threads take
// contiguous runs of (tile, KV head) tasks of about equal cost (positions
// attended). Neither the tiling nor the thread count changes any bit of
// the output: a token's result is the same alone or in any batch.
// Scratch per thread grows with the context: about
// min(16, 2 MiB / (4 * group * (pos + 1))) * group * (pos + 1) floats.
void paged_attention(const float* q, const KvLayerView& kv, const AttentionBatch& batch,
                     int n_heads, float scale, float* out, ThreadPool& pool);

namespace ref {
void paged_attention(const float* q, const KvLayerView& kv, const AttentionBatch& batch,
                     int n_heads, float scale, float* out);
}  // namespace ref

}  // namespace strata
