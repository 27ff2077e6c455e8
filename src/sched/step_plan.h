// StepPlan, StepResult, StepOutput: the plain values one engine step passes
// between Scheduler, ModelRunner and Sampler.
//
//   Scheduler::schedule() -> StepPlan    which tokens of which requests to
//                                        compute, where their K/V goes
//   runner + sampler      -> StepResult  one token per request that samples
//   Scheduler::update()   -> StepOutput  new tokens and finishes to stream
//
// Plain values, owned by whoever holds them; no pointers into the scheduler.
#pragma once

#include <cstdint>
#include <vector>

#include "runtime/forward_batch.h"
#include "sched/request.h"

namespace strata {

// One request's share of a step: tokens [num_computed_tokens,
// num_computed_tokens + num_new_tokens) of its prompt + output, at those
// positions.
struct ScheduledRequest {
  RequestId request_id = 0;
  int64_t num_computed_tokens = 0;     // position of the first new token
  int32_t num_new_tokens = 0;          // >= 1
  std::vector<int32_t> new_token_ids;  // [num_new_tokens]
  // Logical block i -> physical block; covers every position up to the
  // last new token.
  std::vector<int32_t> block_table;
  // The chunk reaches the request's last known token: the runner computes
  // logits for its last row and the sampler draws the next token.
  bool is_sampling = false;
  // At least one prompt token is computed (a prefill chunk, or a recompute).
  bool is_prefill = false;
  // First step of the request (not counting resumes after preemption):
  // the engine creates its sampler state now.
  bool is_first_step = false;

  int32_t position(int32_t i) const { return static_cast<int32_t>(num_computed_tokens + i); }
};

struct StepPlan {
  uint64_t step_id = 0;
  int32_t block_size = 0;
  // Running decodes first, then prefill chunks (running, then admitted).
  std::vector<ScheduledRequest> requests;
  int64_t num_scheduled_tokens = 0;  // sum of num_new_tokens
  // Requests sent back to waiting this step (their blocks are freed).
  std::vector<RequestId> preempted_ids;

  bool empty() const { return requests.empty(); }
};

// The flat batch ModelRunner::forward takes: sequence s is plan.requests[s];
// logits rows are the sampling requests' last tokens, in plan order.
ForwardBatch to_forward_batch(const StepPlan& plan);

struct SampledToken {
  RequestId request_id = 0;
  int32_t token = 0;
};

struct StepResult {
  // Exactly one entry per ScheduledRequest with is_sampling, any order.
  std::vector<SampledToken> sampled;
  // Requests whose forward or sampling failed; they finish with kError
  // while the rest of the batch goes on.
  std::vector<RequestId> failed_ids;
};

// What changed for one request in a step.
struct RequestUpdate {
  RequestId request_id = 0;
  bool has_new_token = false;
  int32_t new_token = 0;
  FinishReason finish_reason = FinishReason::kNone;  // kNone: still running
  int64_t num_prompt_tokens = 0;
  int64_t num_output_tokens = 0;  // including new_token
  int64_t num_cached_prompt_tokens = 0;
};

struct StepOutput {
  // One entry per request that got a token or finished, in plan order.
  std::vector<RequestUpdate> updates;
};

}  // namespace strata
