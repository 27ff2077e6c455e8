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
//
// Model parallelism: with a sharded ModelWeights (weights.group() set) the
// runner runs its rank's share. Rank 0's forward() first broadcasts the
// batch (every rank then runs the same batch); a stage other than the first
// receives the residual stream from the previous stage instead of embedding,
// and one other than the last sends it on (non-blocking); O and down produce
// partial sums that the stage's T shards all-reduce; the last stage computes
// its vocabulary rows and rank 0 gathers them into logits_out. The other
// ranks call forward() from the worker loop (runtime/model_worker.h) with
// logits_out null. Rank 0's constructor tells the workers the pool's size
// (ControlKind::kHello) so every rank's KV pool has the same blocks, and
// waits until every worker has built its runner.
//
// Pipeline micro-batches (rank 0, P > 1): launch() broadcasts a batch and
// runs stage 0 of it, its activations leaving with a non-blocking send, and
// returns without waiting for the logits; collect() waits for the logits of
// the oldest batch launched. Rank 0 can so run stage 0 of batch k+1 while
// the later stages run batch k (every rank runs the batches in launch
// order, so each stage's KV writes keep that order too). forward() is
// launch() + collect() of one batch.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "model/model_weights.h"
#include "runtime/forward_batch.h"
#include "runtime/forward_profile.h"
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

  // Runs the batch; writes logits_out[batch.logits_indices.size()][vocab]
  // (on rank 0; other ranks of a group pass null).
  // An inconsistent batch (sizes, ids, slots or block ids out of range, a
  // position whose block the table lacks, more than max_batch_tokens tokens)
  // is an error and leaves the cache untouched.
  Status forward(const ForwardBatch& batch, float* logits_out);

  // Whether launch() can keep batches in flight: rank 0 of a group with
  // more than one pipeline stage.
  bool can_pipeline() const;
  // Precondition: can_pipeline(). Validates, broadcasts and runs stage 0 of
  // `batch` (the later stages run it on their ranks); an invalid batch is an
  // error with nothing launched.
  Status launch(const ForwardBatch& batch);
  // The oldest launched batch's logits into
  // logits_out[its logits_indices.size()][vocab]. Precondition: one is in
  // flight.
  Status collect(float* logits_out);
  size_t num_in_flight() const { return in_flight_logits_.size(); }

  // Per-phase time and work of the passes run so far, with their roofline
  // floors once set_ceilings() has the machine's (forward_profile.h).
  ForwardProfile& profile() { return profile_; }

 private:
  Status validate(const ForwardBatch& batch) const;
  // `gathers`: a driver that is not the last stage waits for the logits
  // (and its activations' send) here; launch() leaves both for later.
  void forward_local(const ForwardBatch& batch, float* logits_out, bool gathers = true);
  // Last stage: this shard's logits rows -> rank 0's logits_out.
  void gather_logits(int64_t n_logits, float* logits_out);
  // fn(begin, end) over token rows [0, n): split across the pool's threads
  // from a few rows on, else on this thread.
  template <class Fn>
  void for_rows(int64_t n, Fn&& fn);

  const ModelWeights& weights_;
  KvStorage& kv_;
  ThreadPool& pool_;
  int64_t max_batch_tokens_;

  // Scratch, sized for max_batch_tokens_ rows.
  std::vector<float> x_;                  // [n][hidden] residual stream
  std::vector<float> xn_;                 // [n][hidden] normed input of a sub-block
  std::vector<float> q_;                  // [n][heads][head_dim]
  std::vector<float> k_;                  // [n][kv_heads][head_dim]
  std::vector<float> v_;                  // [n][kv_heads][head_dim]
  std::vector<float> attn_;               // [n][heads][head_dim]
  std::vector<float> gate_;               // [n][ffn]
  std::vector<float> up_;                 // [n][ffn]
  std::vector<const int32_t*> tables_;    // [n_seqs] block table pointers
  std::vector<float> logits_local_;       // [n][vocab shard] (model parallel only)
  std::vector<float> logits_part_;        // [n][vocab shard] of another shard (rank 0)
  std::deque<int64_t> in_flight_logits_;  // launched batches' logits rows, oldest first
  std::vector<int64_t> seq_context_;      // [n_seqs] context length (profile_'s attention bytes)
  ForwardProfile profile_;
};

}  // namespace strata
