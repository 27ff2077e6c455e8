#include "sched/step_plan.h"

namespace strata {

ForwardBatch to_forward_batch(const StepPlan& plan) {
  ForwardBatch batch;
  batch.tokens.reserve(plan.num_scheduled_tokens);
  batch.positions.reserve(plan.num_scheduled_tokens);
  batch.seq_index.reserve(plan.num_scheduled_tokens);
  batch.slot_mapping.reserve(plan.num_scheduled_tokens);
  batch.block_tables.reserve(plan.requests.size());
  for (size_t s = 0; s < plan.requests.size(); ++s) {
    const ScheduledRequest& r = plan.requests[s];
    batch.block_tables.push_back(r.block_table);
    for (int32_t i = 0; i < r.num_new_tokens; ++i) {
      const bool wants_logits = r.is_sampling && i == r.num_new_tokens - 1;
      batch.add_token(r.new_token_ids[i], r.position(i), static_cast<int32_t>(s), plan.block_size,
                      wants_logits);
    }
  }
  return batch;
}

}  // namespace strata
