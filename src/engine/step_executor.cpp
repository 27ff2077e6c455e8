#include "engine/step_executor.h"

#include <exception>
#include <limits>
#include <string>
#include <utility>

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

StepPlan StepExecutor::admit_new_requests(const StepPlan& plan, ExecutedStep* out) {
  StepPlan runnable = plan;
  runnable.requests.clear();
  runnable.num_scheduled_tokens = 0;
  for (const ScheduledRequest& s : plan.requests) {
    if (s.new_request && !requests_.count(s.request_id)) {
      const NewRequestData& d = *s.new_request;
      Result<SequenceSampler> sampler =
          SequenceSampler::create(d.sampling, vocab_size_, d.prompt_tokens);
      if (!sampler) {
        out->errors.emplace(s.request_id, sampler.status());
        out->result.failed_ids.push_back(s.request_id);
        continue;
      }
      std::unique_ptr<GrammarMatcher> matcher;
      if (d.grammar) matcher = std::make_unique<GrammarMatcher>(d.grammar);
      requests_.emplace(s.request_id,
                        RequestState{std::move(*sampler), d.stop_token_ids, std::move(matcher)});
    } else if (!requests_.count(s.request_id)) {
      out->errors.emplace(s.request_id,
                          internal_error("executor: request " + std::to_string(s.request_id) +
                                         " was never introduced by a plan"));
      out->result.failed_ids.push_back(s.request_id);
      continue;
    }
    runnable.requests.push_back(s);
    runnable.num_scheduled_tokens += s.num_new_tokens;
  }
  return runnable;
}

ExecutedStep StepExecutor::execute(const StepPlan& plan) {
  for (RequestId id : plan.finished_ids) requests_.erase(id);
  ExecutedStep out;
  const StepPlan runnable = admit_new_requests(plan, &out);
  if (runnable.empty()) return out;

  std::vector<const ScheduledRequest*> rows;  // sampling requests, in logits order
  if (Status status = forward(runnable); status) {
    for (const ScheduledRequest& s : runnable.requests) {
      if (s.is_sampling) rows.push_back(&s);
    }
  } else {
    // Find the culprits one request at a time; the rest keep their results.
    std::vector<float> logits_all;
    for (const ScheduledRequest& s : runnable.requests) {
      StepPlan single = runnable;
      single.requests = {s};
      single.num_scheduled_tokens = s.num_new_tokens;
      if (Status one = forward(single); !one) {
        out.errors.emplace(s.request_id, one);
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
    RequestState& state = requests_.at(s.request_id);
    if (s.masks_stop_tokens) {
      for (int32_t stop : state.stop_token_ids) {
        if (stop >= 0 && stop < vocab_size_) row[stop] = -std::numeric_limits<float>::infinity();
      }
    }
    if (state.matcher) {
      token_mask_.resize(static_cast<size_t>(state.matcher->cache().trie().mask_words()));
      state.matcher->fill_next_token_bitmask(token_mask_);
      apply_token_bitmask(token_mask_, row, vocab_size_);
    }
    SampleResult sample = state.sampler.sample(row, workspace_);
    if (state.matcher) {
      if (!state.matcher->accept_token(sample.token)) {
        // Only when the grammar allows nothing the sampler can draw (e.g.
        // every allowed token masked as a stop token before min_tokens).
        out.errors.emplace(s.request_id,
                           invalid_argument("grammar: no allowed token could be sampled"));
        out.result.failed_ids.push_back(s.request_id);
        continue;
      }
      if (state.matcher->is_terminated()) out.grammar_finished_ids.push_back(s.request_id);
    }
    out.result.sampled.push_back({s.request_id, sample.token});
    out.samples.emplace(s.request_id, std::move(sample));
  }
  return out;
}

}  // namespace strata
