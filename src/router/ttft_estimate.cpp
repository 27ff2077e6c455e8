#include "router/ttft_estimate.h"

#include <algorithm>

namespace strata::router {

TtftEstimate estimate_ttft(int64_t num_prompt_tokens, const PrefixProbe& probe,
                           int64_t routed_pending_tokens, const CostModel& model) {
  TtftEstimate e;
  const double prefill_rate = probe.prefill_tokens_per_s > 0.0 ? probe.prefill_tokens_per_s
                                                               : model.default_prefill_tokens_per_s;
  // The last prompt token is always computed (its logits are needed), and
  // hits are whole blocks: the engine takes at most (n - 1) / block_size
  // blocks (KvCacheManager::find_prefix), so the prediction does too.
  int64_t max_cached = std::max<int64_t>(0, num_prompt_tokens - 1);
  if (probe.block_size > 0) max_cached -= max_cached % probe.block_size;
  int64_t covered = std::min(probe.num_pool_tokens, max_cached);
  e.num_pool_tokens = covered;
  double load_seconds = 0.0;
  for (const KvSourceProbe& t : probe.tiers) {
    if (!t.is_available) continue;
    const int64_t upto = std::min(t.num_tokens, max_cached);
    if (upto <= covered) continue;
    double rate = t.tokens_per_s;
    if (!(rate > 0.0)) {
      auto it = model.default_tier_tokens_per_s.find(t.name);
      rate = it != model.default_tier_tokens_per_s.end() ? it->second
                                                         : model.default_other_tier_tokens_per_s;
    }
    load_seconds += static_cast<double>(upto - covered) / rate;
    covered = upto;
  }
  e.num_cached_tokens = covered;
  e.num_computed_tokens = num_prompt_tokens - covered;
  const int64_t pending = std::max(probe.num_pending_prefill_tokens, routed_pending_tokens);
  e.queue_seconds = static_cast<double>(pending) / prefill_rate;
  e.seconds =
      e.queue_seconds + load_seconds + static_cast<double>(e.num_computed_tokens) / prefill_rate;
  return e;
}

}  // namespace strata::router
