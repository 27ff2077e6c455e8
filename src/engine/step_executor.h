// StepExecutor: turns the scheduler's StepPlan into a StepResult — one
// forward pass over the plan's flattened batch (logits only for the rows
// that sample), then each sampling request's SequenceSampler.
//
// A request's sampler is created on its first step from the SamplingParams
// its RequestSpec carries (seeded, so a request draws the same tokens
// whatever it is batched with) and lives until release(); preemption keeps
// it, so a recomputed request continues its random stream. One
// SamplerWorkspace serves every request. Before a request has min_tokens
// outputs, its stop tokens are masked out of its logits row.
//
// Failures stay per request: a sampler that rejects its params fails that
// request alone; a forward pass that fails is retried one request at a time
// (the runner leaves the cache untouched on error) so only the culprits
// fail. Borrows the runner; the engine thread owns this. Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/model_runner.h"
#include "runtime/sampler.h"
#include "sched/scheduler.h"
#include "sched/step_plan.h"

namespace strata {

struct ExecutedStep {
  StepResult result;
  // Per sampled request: the sampler's full result (logprobs).
  std::unordered_map<RequestId, SampleResult> samples;
  // Per failed request: why.
  std::unordered_map<RequestId, std::string> errors;
};

class StepExecutor {
 public:
  StepExecutor(ModelRunner& runner, int32_t vocab_size);

  // Runs `plan`; `scheduler` (which made it) supplies each request's spec,
  // prompt and output count.
  ExecutedStep execute(const StepPlan& plan, const Scheduler& scheduler);

  // Forgets a finished request's sampler.
  void release(RequestId id) { samplers_.erase(id); }
  size_t num_samplers() const { return samplers_.size(); }

 private:
  // Forward over `plan` into logits_; the error, if any.
  Status forward(const StepPlan& plan);

  ModelRunner& runner_;
  int32_t vocab_size_;
  SamplerWorkspace workspace_;
  std::unordered_map<RequestId, SequenceSampler> samplers_;
  std::vector<float> logits_;  // [num sampling rows][vocab]
};

}  // namespace strata
