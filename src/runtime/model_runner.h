// ModelRunner: one forward pass of a llama-family decoder over a flat, mixed
// batch (ForwardBatch), reading and writing the paged KV cache.
//
// Ownership: borrows the ModelWeights, the KvStorage and the ThreadPool, which
// must outlive it. All scratch is allocated in the constructor for
// max_batch_tokens tokens; forward() allocates nothing. Not thread-safe: one
// forward() at a time (it uses the pool's threads internally).
//
// Per layer: x -> rms_norm -> q,k,v (+bias: qwen2) -> per-head rms_norm of q
// and k (qwen3) -> RoPE -> write K/V to slots -> paged attention ->
// attn_output -> +x -> rms_norm -> gate, up -> silu(gate)*up -> down -> +x.
// Then, for logits rows only: final rms_norm and the output matmul (or the
// tied token embedding).
#pragma once

#include <cstdint>
#include <vector>

#include "model/model_weights.h"
#include "runtime/forward_batch.h"
#include "runtime/kv_storage.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace strata {

class ModelRunner {
 public:
  ModelRunner(const ModelWeights& weights, KvStorage& kv, ThreadPool& pool,
              int64_t max_batch_tokens);

  int64_t max_batch_tokens() const { return max_batch_tokens_; }
  int64_t vocab_size() const { return weights_.config().vocab_size; }

  // Runs the batch; writes logits_out[batch.logits_indices.size()][vocab].
  // An inconsistent batch (sizes, ids, slots or block ids out of range, a
  // position whose block the table lacks, more than max_batch_tokens tokens)
  // is an error and leaves the cache untouched.
  Status forward(const ForwardBatch& batch, float* logits_out);

 private:
  Status validate(const ForwardBatch& batch) const;

  const ModelWeights& weights_;
  KvStorage& kv_;
  ThreadPool& pool_;
  int64_t max_batch_tokens_;

  // Scratch, sized for max_batch_tokens_ rows.
  std::vector<float> x_;                // [n][hidden] residual stream
  std::vector<float> xn_;               // [n][hidden] normed input of a sub-block
  std::vector<float> q_;                // [n][heads][head_dim]
  std::vector<float> k_;                // [n][kv_heads][head_dim]
  std::vector<float> v_;                // [n][kv_heads][head_dim]
  std::vector<float> attn_;             // [n][heads][head_dim]
  std::vector<float> gate_;             // [n][ffn]
  std::vector<float> up_;               // [n][ffn]
  std::vector<const int32_t*> tables_;  // [n_seqs] block table pointers
};

}  // namespace strata
