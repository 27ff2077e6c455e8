#include "cli/single_sequence.h"

#include <algorithm>
#include <string>
#include <thread>

#include "runtime/forward_batch.h"

namespace strata::cli {

Result<std::unique_ptr<SingleSequence>> SingleSequence::create(const ModelWeights& weights,
                                                               int64_t context_tokens,
                                                               int num_threads,
                                                               int64_t max_batch_tokens) {
  if (context_tokens <= 0) return invalid_argument("--ctx-size must be positive");
  std::unique_ptr<SingleSequence> s(new SingleSequence());
  s->context_tokens_ = context_tokens;
  s->max_batch_tokens_ = std::max<int64_t>(1, std::min(max_batch_tokens, context_tokens));
  if (num_threads <= 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  s->pool_ = std::make_unique<ThreadPool>(num_threads);
  const int64_t num_blocks = (context_tokens + kBlockSize - 1) / kBlockSize;
  STRATA_ASSIGN_OR_RETURN(KvStorage kv,
                          KvStorage::create(weights.local_config(), kBlockSize, num_blocks));
  s->kv_ = std::make_unique<KvStorage>(std::move(kv));
  s->runner_ = std::make_unique<ModelRunner>(weights, *s->kv_, *s->pool_, s->max_batch_tokens_);
  s->block_table_.resize(num_blocks);
  for (int64_t i = 0; i < num_blocks; ++i) s->block_table_[i] = static_cast<int32_t>(i);
  s->logits_.resize(weights.config().vocab_size);
  return s;
}

Status SingleSequence::append(std::span<const int32_t> tokens) {
  if (num_tokens_ + static_cast<int64_t>(tokens.size()) > context_tokens_) {
    return out_of_range("the sequence needs " + std::to_string(num_tokens_ + tokens.size()) +
                        " tokens but the context holds " + std::to_string(context_tokens_) +
                        " (raise --ctx-size or shorten the prompt)");
  }
  size_t done = 0;
  ForwardBatch batch;
  batch.block_tables = {block_table_};
  while (done < tokens.size()) {
    const size_t n = std::min<size_t>(tokens.size() - done, max_batch_tokens_);
    batch.tokens.clear();
    batch.positions.clear();
    batch.seq_index.clear();
    batch.slot_mapping.clear();
    batch.logits_indices.clear();
    for (size_t i = 0; i < n; ++i) {
      const bool is_last = done + i + 1 == tokens.size();
      batch.add_token(tokens[done + i], static_cast<int32_t>(num_tokens_ + i), 0, kBlockSize,
                      is_last);
    }
    STRATA_RETURN_IF_ERROR(runner_->forward(batch, logits_.data()));
    num_tokens_ += static_cast<int64_t>(n);
    done += n;
  }
  return Status::ok();
}

}  // namespace strata::cli
