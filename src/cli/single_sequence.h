// SingleSequence: drives ModelRunner for one sequence at a time — the engine
// of `strata generate` and `strata bench forward` until the serving core's
// scheduler takes over. It owns the thread pool, a KV storage just large
// enough for `context_tokens`, and a block table that maps logical block i to
// physical block i. Prompts are prefilled in chunks of at most
// `max_batch_tokens`. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "model/model_weights.h"
#include "runtime/kv_storage.h"
#include "runtime/model_runner.h"
#include "util/status.h"
#include "util/thread_pool.h"

namespace strata::cli {

class SingleSequence {
 public:
  static constexpr int kBlockSize = 16;

  static Result<std::unique_ptr<SingleSequence>> create(const ModelWeights& weights,
                                                        int64_t context_tokens, int num_threads,
                                                        int64_t max_batch_tokens);

  int64_t context_tokens() const { return context_tokens_; }
  int64_t num_tokens() const { return num_tokens_; }
  int64_t vocab_size() const { return runner_->vocab_size(); }

  // Forgets the sequence (its KV slots are overwritten by the next one).
  void reset() { num_tokens_ = 0; }

  // Appends `tokens` to the sequence; logits of the last one land in logits().
  // A sequence that would outgrow the context is an error naming --ctx-size.
  Status append(std::span<const int32_t> tokens);
  const std::vector<float>& logits() const { return logits_; }
  // The runner's per-phase time and work (runtime/forward_profile.h).
  ForwardProfile& profile() { return runner_->profile(); }

 private:
  SingleSequence() = default;

  int64_t context_tokens_ = 0;
  int64_t max_batch_tokens_ = 0;
  int64_t num_tokens_ = 0;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<KvStorage> kv_;
  std::unique_ptr<ModelRunner> runner_;
  std::vector<int32_t> block_table_;
  std::vector<float> logits_;
};

}  // namespace strata::cli
