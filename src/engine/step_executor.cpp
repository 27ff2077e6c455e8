#include "engine/step_executor.h"

#include <exception>
#include <limits>
#include <string>

namespace strata {

StepExecutor::StepExecutor(ModelRunner& runner, int32_t vocab_size)
    : runner_(runner), vocab_size_(vocab_size), workspace_(vocab_size) {}

Status StepExecutor::forward(const StepPlan& plan) {
  const ForwardBatch batch = to_forward_batch(plan);
  logits_.resize(batch.logits_indices.size() * static_cast<size_t>(vocab_size_));
  try {
    return runner_.forward(batch, logits_.data());
  } catch (const std::exception& e) {
    return internal_error(std::string("forward pass threw: ") + e.what());
  }
}

ExecutedStep StepExecutor::execute(const StepPlan& plan, const Scheduler& scheduler) {
  ExecutedStep out;
  // Samplers first: a request whose params are rejected does not run.
  StepPlan runnable = plan;
  runnable.requests.clear();
  runnable.num_scheduled_tokens = 0;
  for (const ScheduledRequest& s : plan.requests) {
    const Request* r = scheduler.find(s.request_id);
    if (r == nullptr) {
      out.errors[s.request_id] = "internal: scheduled request is unknown";
      out.result.failed_ids.push_back(s.request_id);
      continue;
    }
    if (!samplers_.count(s.request_id)) {
      Result<SequenceSampler> sampler =
          SequenceSampler::create(r->spec.sampling, vocab_size_, r->prompt_tokens());
      if (!sampler) {
        out.errors[s.request_id] = sampler.status().message();
        out.result.failed_ids.push_back(s.request_id);
        continue;
      }
      samplers_.emplace(s.request_id, std::move(*sampler));
    }
    runnable.requests.push_back(s);
    runnable.num_scheduled_tokens += s.num_new_tokens;
  }
  if (runnable.empty()) return out;

  std::vector<const ScheduledRequest*> rows;  // sampling requests, in logits order
  Status status = forward(runnable);
  if (status) {
    for (const ScheduledRequest& s : runnable.requests) {
      if (s.is_sampling) rows.push_back(&s);
    }
    // Sampling below reads logits_ in `rows` order.
  } else {
    // Find the culprits one request at a time; the rest keep their results.
    std::vector<float> logits_all;
    for (const ScheduledRequest& s : runnable.requests) {
      StepPlan single = runnable;
      single.requests = {s};
      single.num_scheduled_tokens = s.num_new_tokens;
      if (Status one = forward(single); !one) {
        out.errors[s.request_id] = one.message();
        out.result.failed_ids.push_back(s.request_id);
        continue;
      }
      if (s.is_sampling) {
        logits_all.insert(logits_all.end(), logits_.begin(), logits_.end());
        rows.push_back(&s);
      }
    }
    logits_.swap(logits_all);
  }

  for (size_t i = 0; i < rows.size(); ++i) {
    const ScheduledRequest& s = *rows[i];
    float* row = logits_.data() + i * static_cast<size_t>(vocab_size_);
    const Request* r = scheduler.find(s.request_id);
    if (r->num_output_tokens() < r->spec.min_tokens) {
      for (int32_t stop : r->spec.stop_token_ids) {
        if (stop >= 0 && stop < vocab_size_) row[stop] = -std::numeric_limits<float>::infinity();
      }
    }
    SequenceSampler& sampler = samplers_.at(s.request_id);
    SampleResult sample = sampler.sample(row, workspace_);
    out.result.sampled.push_back({s.request_id, sample.token});
    out.samples.emplace(s.request_id, std::move(sample));
  }
  return out;
}

}  // namespace strata
