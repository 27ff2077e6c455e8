// SchedulerOptions: the scheduler's knobs, each with its default and
// meaning; validated once at start-up. SchedulingPolicy: the order in which
// requests get KV blocks and tokens. Plain values.
#pragma once

#include <cstdint>
#include <string_view>

#include "util/status.h"

namespace strata {

enum class SchedulingPolicy {
  // First come, first served by admission order. A waiting request never
  // preempts a running one.
  kFcfs,
  // Lower `priority` first, admission order among equals. A waiting request
  // whose priority is strictly better than the worst running request's may
  // preempt it.
  kPriority,
};

Result<SchedulingPolicy> parse_scheduling_policy(std::string_view name);  // "fcfs" | "priority"
const char* scheduling_policy_name(SchedulingPolicy policy);

// The engine fills every field from EngineOptions (engine/engine_options.h
// owns the defaults); the initializers below are not defaults: the zero
// sizes fail validate() until set.
struct SchedulerOptions {
  // Most requests running at once (--max-num-seqs). >= 1. The effective cap
  // is min(max_num_seqs, max_num_batched_tokens), so that every running
  // request gets at least its decode token every step (no starvation).
  int32_t max_num_seqs = 0;
  // Most tokens computed per step, decodes and prefill chunks together
  // (--max-num-batched-tokens). >= 1. Small on a CPU: a step's latency is
  // proportional to its tokens, and long prefills must not freeze decodes.
  int64_t max_num_batched_tokens = 0;
  // Most prompt tokens (prefill chunks, recompute) one step computes while
  // any running request is decoding (--max-prefill-tokens); 0 = no limit
  // beyond max_num_batched_tokens. This is the CPU's chunked-prefill knob: a
  // step's latency grows with its prefill tokens, so a small chunk keeps the
  // decoding streams' inter-token latency low, while a step with no decodes
  // (a lone long prompt) still prefills at the full budget. Unlike
  // max_num_batched_tokens it does not cap how many requests run at once.
  int64_t max_prefill_tokens = 0;
  // How max_prefill_tokens counts a prompt token: one at position p counts
  // 1 + p / prefill_cost_context_len (0: every token counts 1). A prompt
  // token's weight matmuls cost the same at any position, but its attention
  // reads all p earlier positions, so late chunks of a long prompt cost more
  // per token; counting that keeps a step's latency, not its token count,
  // under the knob, and the chunks shrink as the prompt goes on. Still at
  // least one prompt token per step, so a prompt always advances. The engine
  // sets it from the model's shape (EngineOptions::prefill_attention_cost).
  int64_t prefill_cost_context_len = 0;
  // Longest prompt + output (--max-model-len); requests beyond it are
  // rejected at admission. >= 2.
  int64_t max_model_len = 0;
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  // Priority aging (priority policy only): every priority_aging_ns spent
  // since arrival counts as one priority level better, so a low-priority
  // request cannot wait forever behind a stream of better ones. The order
  // key is then priority * aging + arrival_ns, which never changes for a
  // request, so aging never reorders requests already in the queues.
  // 0 disables aging (strict priority). 0..1e12; priorities are clamped to
  // +-1e6 inside the key.
  int64_t priority_aging_ns = 0;

  Status validate() const;
  int32_t effective_max_num_seqs() const;
};

}  // namespace strata
