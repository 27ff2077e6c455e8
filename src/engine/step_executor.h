// StepExecutor: runs one StepPlan - a forward pass over the plan's flattened
// batch (logits only for the rows that sample), then each sampling request's
// SequenceSampler - and returns what happened as plain values.
//
// It reads nothing but the plan: a request's sampler is created from the
// NewRequestData of its first step (seeded, so a request draws the same
// tokens whatever it is batched with) and lives until the request appears in
// a plan's finished_ids; preemption keeps it, so a recomputed request
// continues its random stream. One SamplerWorkspace serves every request.
// While a request has fewer than min_tokens outputs (masks_stop_tokens), its
// stop tokens are masked out of its logits row. A request with a grammar
// owns a GrammarMatcher (created with its sampler): its row is masked to the
// grammar's allowed tokens before sampling and the matcher advanced with the
// sampled token; the mask depends on the request's own tokens only, so batch
// invariance holds. Jump-forward: when the grammar then forces bytes (a key,
// punctuation, the tail of an enum value), they are tokenized - together
// with the sampled token when the tokenizer would not merge across that
// boundary; longest-match tokens over the vocabulary when the tokenizer's
// encoding does not spell them exactly - and returned as forced tokens,
// minus the last one (the model may merge it with what follows) unless the
// grammar ends there.
//
// Speculative decoding: a request with drafts has 1 + num_draft_tokens
// logits rows; its drafts are verified in order (SequenceSampler::verify:
// greedy keeps a draft that is the argmax, sampling keeps it with its
// probability or draws from the residual) and the first rejection's row, or
// the last row when every draft held, gives the token after them.
//
// Failures stay per request: a sampler that rejects its params fails that
// request alone; a forward pass that fails is retried one request at a time
// (the runner leaves the cache untouched on error) so only the culprits
// fail.
//
// Pipeline micro-batches (can_pipeline(): rank 0 of a group with P > 1
// stages): launch() does what execute() does up to the forward pass and
// leaves that in flight (ModelRunner::launch); finish() collects the oldest
// launched plan's logits and samples it. Plans finish in launch order. A
// request aborted while its plan is in flight (its state dropped through a
// later plan's finished_ids) is simply not sampled.
//
// Borrows the runner; the engine thread owns this. Not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "runtime/forward_batch.h"
#include "runtime/model_runner.h"
#include "sampler/sampler.h"
#include "sched/step_plan.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace strata {

struct ExecutedStep {
  StepResult result;
  // Per sampled request: the sampler's full result (logprobs).
  std::unordered_map<RequestId, SampleResult> samples;
  // Per failed request: why (kInvalidArgument for rejected sampling
  // parameters, kInternal for a failed forward pass).
  std::unordered_map<RequestId, Status> errors;
};

// The flat batch ModelRunner::forward takes: sequence s is plan.requests[s];
// logits rows are the sampling requests' last tokens, in plan order.
ForwardBatch to_forward_batch(const StepPlan& plan);

class StepExecutor {
 public:
  // `tokenizer` (may be null: no jump-forward) retokenizes the bytes a
  // grammar forces.
  StepExecutor(ModelRunner& runner, int32_t vocab_size, const Tokenizer* tokenizer = nullptr);

  // Drops the state of plan.finished_ids, then runs the plan's requests.
  ExecutedStep execute(const StepPlan& plan);

  size_t num_samplers() const { return requests_.size(); }
  // Request `id`'s sampler; null before its first step or after it ended.
  const SequenceSampler* sampler_of(RequestId id) const;

  bool can_pipeline() const { return runner_.can_pipeline(); }
  // Precondition: can_pipeline(). False when the plan's batch does not
  // launch (it does not validate): nothing of it is in flight; execute()
  // it once the plans in flight are finished (it then finds the culprits).
  bool launch(const StepPlan& plan);
  // The oldest launched plan's result. Precondition: num_in_flight() > 0.
  ExecutedStep finish();
  size_t num_in_flight() const { return in_flight_.size(); }

 private:
  // A launched plan: its runnable part and what admission already decided.
  struct Launched {
    StepPlan runnable;
    ExecutedStep out;
    size_t num_rows = 0;    // logits rows of its batch
    bool launched = false;  // false: nothing ran (no runnable request)
  };
  // Samples each of `rows` (the sampling requests, in logits order) from
  // logits_.
  void sample_rows(const std::vector<const ScheduledRequest*>& rows, ExecutedStep* out);
  // Forward over `plan` into logits_; the error, if any.
  Status forward(const StepPlan& plan);
  // Creates the samplers of requests new in `plan`; the runnable rest.
  StepPlan admit_new_requests(const StepPlan& plan, ExecutedStep* out);
  // Jump-forward: the tokens for the bytes the grammar forces after
  // `sampled` (already accepted by `m`), accepted by `m` too; empty when
  // none or when they do not retokenize cleanly.
  std::vector<int32_t> forced_tokens(GrammarMatcher& m, int32_t sampled);
  struct RequestState;
  // Speculative decoding: verifies the drafts of `s` against its
  // 1 + num_draft_tokens logits rows (at `rows`), in order, with the
  // request's sampler (accept or draw from the residual), then draws the
  // token after the accepted ones.
  SampledToken verify_drafts(const ScheduledRequest& s, const float* rows, RequestState& state,
                             std::unordered_map<RequestId, SampleResult>* samples);

  ModelRunner& runner_;
  int32_t vocab_size_;
  const Tokenizer* tokenizer_;
  SamplerWorkspace workspace_;
  struct RequestState {
    SequenceSampler sampler;
    std::vector<int32_t> stop_token_ids;
    std::unique_ptr<GrammarMatcher> matcher;  // null: unconstrained
    bool jump_forward = false;                // forced tokens appended (never with logprobs)
  };
  std::unordered_map<RequestId, RequestState> requests_;
  std::vector<float> logits_;         // [num sampling rows][vocab]
  std::vector<uint64_t> token_mask_;  // one grammar mask, reused
  std::deque<Launched> in_flight_;    // launch order
};

}  // namespace strata
