// StepPlan, StepResult, StepOutput: the plain values one engine step passes
// between Scheduler, ModelRunner and Sampler.
//
//   Scheduler::schedule() -> StepPlan    which tokens of which requests to
//                                        compute, where their K/V goes
//   runner + sampler      -> StepResult  one token per request that samples
//   Scheduler::update()   -> StepOutput  new tokens and finishes to stream
//
// Plain values, owned by whoever holds them; no pointers into the scheduler.
// A StepPlan is self-contained: the executor needs nothing else (no reads of
// the scheduler), so a plan can be tested alone, or sent to another rank.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "sampler/sampler.h"
#include "sched/request.h"

namespace strata {

// What the executor needs of a request it has not seen before; sent once, in
// the plan of the request's first step (not again after a preemption: the
// executor keeps its state until the request is in finished_ids).
struct NewRequestData {
  SamplingParams sampling;
  std::vector<int32_t> prompt_tokens;  // repetition penalties read them
  // Masked out of the logits while fewer than min_tokens outputs exist (see
  // ScheduledRequest::masks_stop_tokens): the request's stop tokens.
  std::vector<int32_t> stop_token_ids;
  // Constrains sampling to a grammar (a matcher per request); null: none.
  std::shared_ptr<const TokenMaskCache> grammar;
};

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
  // The token sampled this step must not be a stop token: the request has
  // fewer than min_tokens outputs.
  bool masks_stop_tokens = false;
  // Speculative decoding: the last num_draft_tokens of new_token_ids are a
  // drafter's guesses at the tokens after the request's last one (a decode
  // step, is_sampling). The runner computes logits for the last
  // 1 + num_draft_tokens rows and the executor verifies the drafts in order;
  // the block table covers them all.
  int32_t num_draft_tokens = 0;
  // Set on the request's first step only (not on resumes after preemption).
  std::optional<NewRequestData> new_request;

  // Rows of the chunk whose logits the step needs.
  int32_t num_logits_rows() const { return is_sampling ? 1 + num_draft_tokens : 0; }

  bool is_first_step() const { return new_request.has_value(); }

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
  // Requests finished (or aborted) since the previous plan: the executor
  // drops their state. Delivered even in a plan with no requests.
  std::vector<RequestId> finished_ids;
  // Wall time the drafter spent proposing drafts for this plan (0 without
  // speculation): what speculation costs a step whether or not it drafts.
  double draft_proposal_seconds = 0.0;

  bool empty() const { return requests.empty(); }
};

struct SampledToken {
  RequestId request_id = 0;
  int32_t token = 0;
  // Jump-forward: tokens a grammar forces right after `token`, appended in
  // the same update (the next step computes them as one chunk).
  std::vector<int32_t> forced_tokens = {};
  // The request's grammar ended with these tokens: finish it (kStop).
  bool ends_request = false;
  // Speculative decoding: the plan's first num_accepted_drafts drafts were
  // verified; they come before `token` (which the last row's logits drew:
  // the correction of the first rejected draft, or the token after the
  // last draft when all were accepted).
  int32_t num_accepted_drafts = 0;
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
  // Appended after new_token in the same step: the tokens a grammar forced
  // (jump-forward), or under speculative decoding the rest of the accepted
  // drafts and the token drawn after them (new_token is then the first
  // accepted draft).
  std::vector<int32_t> forced_tokens = {};
  FinishReason finish_reason = FinishReason::kNone;  // kNone: still running
  int32_t num_draft_tokens = 0;     // speculative decoding: drafts verified this step
  int32_t num_accepted_drafts = 0;  // of them accepted (and appended)
  // kStop because this update's last token is a stop token (EOS or one of
  // the request's stop_token_ids), as opposed to a grammar's end.
  bool ends_on_stop_token = false;
  int64_t num_prompt_tokens = 0;
  int64_t num_output_tokens = 0;  // including new_token
  int64_t num_cached_prompt_tokens = 0;
};

struct StepOutput {
  // One entry per request that got a token or finished, in plan order.
  std::vector<RequestUpdate> updates;
};

}  // namespace strata
