#include "sched/scheduler_options.h"

#include <algorithm>
#include <string>

namespace strata {

Result<SchedulingPolicy> parse_scheduling_policy(std::string_view name) {
  if (name == "fcfs") return SchedulingPolicy::kFcfs;
  if (name == "priority") return SchedulingPolicy::kPriority;
  return invalid_argument("scheduler: unknown --scheduling-policy '" + std::string(name) +
                          "' (expected fcfs or priority)");
}

const char* scheduling_policy_name(SchedulingPolicy policy) {
  return policy == SchedulingPolicy::kPriority ? "priority" : "fcfs";
}

Status SchedulerOptions::validate() const {
  if (max_num_seqs < 1) return invalid_argument("scheduler: --max-num-seqs must be >= 1");
  if (max_num_batched_tokens < 1) {
    return invalid_argument("scheduler: --max-num-batched-tokens must be >= 1");
  }
  if (max_prefill_tokens < 0) {
    return invalid_argument("scheduler: --max-prefill-tokens must be >= 0");
  }
  if (prefill_cost_context_len < 0) {
    return invalid_argument("scheduler: prefill_cost_context_len must be >= 0");
  }
  if (max_model_len < 2) return invalid_argument("scheduler: --max-model-len must be >= 2");
  if (priority_aging_ns < 0 || priority_aging_ns > 1'000'000'000'000) {
    return invalid_argument("scheduler: priority aging must be in [0, 1000] seconds");
  }
  return Status::ok();
}

int32_t SchedulerOptions::effective_max_num_seqs() const {
  return static_cast<int32_t>(std::min<int64_t>(max_num_seqs, max_num_batched_tokens));
}

}  // namespace strata
