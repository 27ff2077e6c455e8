#include "engine/step_executor.h"

#include <exception>
#include <limits>
#include <span>
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
      const bool wants_logits = i >= r.num_new_tokens - r.num_logits_rows();
      batch.add_token(r.new_token_ids[i], r.position(i), static_cast<int32_t>(s), plan.block_size,
                      wants_logits);
    }
  }
  return batch;
}

StepExecutor::StepExecutor(ModelRunner& runner, int32_t vocab_size, const Tokenizer* tokenizer)
    : runner_(runner), vocab_size_(vocab_size), tokenizer_(tokenizer), workspace_(vocab_size) {}

std::vector<int32_t> StepExecutor::forced_tokens(GrammarMatcher& m, int32_t sampled) {
  constexpr size_t kMaxForcedBytes = 256;
  std::string forced = m.find_jump_forward_bytes(kMaxForcedBytes);
  // Whole UTF-8 characters only.
  size_t end = forced.size();
  for (size_t i = forced.size(); i > 0 && i + 4 > forced.size(); --i) {
    const unsigned char c = static_cast<unsigned char>(forced[i - 1]);
    if ((c & 0xC0) == 0x80) continue;
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    if (i - 1 + len > forced.size()) end = i - 1;
    break;
  }
  forced.resize(end);
  if (forced.empty()) return {};
  // The tokens the tokenizer gives the sampled token's text plus the forced
  // bytes, when it keeps the sampled token; else the forced bytes alone.
  std::vector<int32_t> ids =
      tokenizer_->encode(tokenizer_->token_to_piece(sampled) + forced, false, false);
  if (!ids.empty() && ids[0] == sampled) {
    ids.erase(ids.begin());
  } else {
    ids = tokenizer_->encode(forced, false, false);
  }
  std::string spelled;
  for (int32_t id : ids) spelled += tokenizer_->token_to_piece(id);
  // A SentencePiece space prefix (or normalization) changed the bytes:
  // longest-match tokens over the vocabulary instead.
  if (spelled != forced) ids = m.cache().trie().greedy_tokenize(forced);
  if (ids.empty()) return {};
  int32_t accepted = 0;
  for (int32_t id : ids) {
    if (!m.accept_token(id)) {
      m.rollback(accepted);
      return {};
    }
    ++accepted;
  }
  if (!m.is_terminated() && !ids.empty()) {
    m.rollback(1);
    ids.pop_back();
  }
  return ids;
}

Status StepExecutor::forward(const StepPlan& plan) {
  const ForwardBatch batch = to_forward_batch(plan);
  logits_.resize(batch.logits_indices.size() * static_cast<size_t>(vocab_size_));
  try {
    return runner_.forward(batch, logits_.data());
  } catch (const std::exception& e) {
    return internal_error(std::string("forward pass threw: ") + e.what());
  }
}

namespace {

// Migration: a resumed request's grammar matcher accepts the outputs the
// other engine produced (the last resume_num_output_tokens of its prompt).
Status replay_resumed(const NewRequestData& d, GrammarMatcher* matcher) {
  const int64_t k = d.sampling.resume_num_output_tokens;
  if (matcher == nullptr || k <= 0) return Status::ok();
  if (k >= static_cast<int64_t>(d.prompt_tokens.size())) {
    return invalid_argument("resume: more output tokens than the request holds");
  }
  for (size_t i = d.prompt_tokens.size() - static_cast<size_t>(k); i < d.prompt_tokens.size();
       ++i) {
    if (!matcher->accept_token(d.prompt_tokens[i])) {
      return invalid_argument("resume: the output tokens do not match the request's grammar");
    }
  }
  return Status::ok();
}

}  // namespace

const SequenceSampler* StepExecutor::sampler_of(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : &it->second.sampler;
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
      if (Status replayed = replay_resumed(d, matcher.get()); !replayed) {
        out->errors.emplace(s.request_id, replayed);
        out->result.failed_ids.push_back(s.request_id);
        continue;
      }
      const bool jump_forward = d.grammar && tokenizer_ && d.sampling.num_logprobs == 0;
      requests_.emplace(s.request_id, RequestState{std::move(*sampler), d.stop_token_ids,
                                                   std::move(matcher), jump_forward});
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

SampledToken StepExecutor::verify_drafts(const ScheduledRequest& s, const float* rows,
                                         RequestState& state,
                                         std::unordered_map<RequestId, SampleResult>* samples) {
  // Row j predicts the token after new_token_ids[num_new - 1 - num_draft + j];
  // draft j is verified against row j, and the first rejection's row (or,
  // all accepted, the last row) gives the token that follows.
  const auto drafts = std::span<const int32_t>(s.new_token_ids).last(s.num_draft_tokens);
  SampledToken sampled{s.request_id, 0, {}, false};
  for (int32_t j = 0; j <= s.num_draft_tokens; ++j) {
    const float* row = rows + static_cast<size_t>(j) * static_cast<size_t>(vocab_size_);
    SampleResult r;
    if (j < s.num_draft_tokens) {
      bool accepted = false;
      r = state.sampler.verify(row, drafts[j], workspace_, &accepted);
      if (accepted) {
        ++sampled.num_accepted_drafts;
        continue;
      }
    } else {
      r = state.sampler.sample(row, workspace_);
    }
    sampled.token = r.token;
    (*samples)[s.request_id] = std::move(r);
    break;
  }
  return sampled;
}

void StepExecutor::sample_rows(const std::vector<const ScheduledRequest*>& rows,
                               ExecutedStep* out_ptr) {
  ExecutedStep& out = *out_ptr;
  size_t first_row = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const ScheduledRequest& s = *rows[i];
    float* row = logits_.data() + first_row * static_cast<size_t>(vocab_size_);
    first_row += static_cast<size_t>(s.num_logits_rows());
    auto found = requests_.find(s.request_id);
    if (found == requests_.end()) continue;  // aborted while its plan was in flight
    RequestState& state = found->second;
    if (s.num_draft_tokens > 0) {
      SampledToken sampled = verify_drafts(s, row, state, &out.samples);
      out.result.sampled.push_back(std::move(sampled));
      continue;
    }
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
    }
    SampledToken sampled{s.request_id, sample.token, {}, false};
    if (state.matcher) {
      if (state.jump_forward && !state.matcher->is_terminated()) {
        sampled.forced_tokens = forced_tokens(*state.matcher, sample.token);
      }
      sampled.ends_request = state.matcher->is_terminated();
    }
    out.result.sampled.push_back(std::move(sampled));
    out.samples.emplace(s.request_id, std::move(sample));
  }
}

bool StepExecutor::launch(const StepPlan& plan) {
  for (RequestId id : plan.finished_ids) requests_.erase(id);
  Launched l;
  l.runnable = admit_new_requests(plan, &l.out);
  if (!l.runnable.empty()) {
    const ForwardBatch batch = to_forward_batch(l.runnable);
    if (Status s = runner_.launch(batch); !s) {
      if (s.code() != StatusCode::kResourceExhausted) return false;
      // The group failed: the process is winding down; the plan's requests
      // fail (503) when it is finished.
      for (const ScheduledRequest& r : l.runnable.requests) {
        l.out.errors.emplace(r.request_id, s);
        l.out.result.failed_ids.push_back(r.request_id);
      }
    } else {
      l.num_rows = batch.logits_indices.size();
      l.launched = true;
    }
  }
  in_flight_.push_back(std::move(l));
  return true;
}

ExecutedStep StepExecutor::finish() {
  Launched l = std::move(in_flight_.front());
  in_flight_.pop_front();
  ExecutedStep out = std::move(l.out);
  if (!l.launched) return out;
  logits_.resize(l.num_rows * static_cast<size_t>(vocab_size_));
  if (Status s = runner_.collect(logits_.data()); !s) {
    for (const ScheduledRequest& r : l.runnable.requests) {
      out.errors.emplace(r.request_id, s);
      out.result.failed_ids.push_back(r.request_id);
    }
    return out;
  }
  std::vector<const ScheduledRequest*> rows;
  for (const ScheduledRequest& r : l.runnable.requests) {
    if (r.is_sampling) rows.push_back(&r);
  }
  sample_rows(rows, &out);
  return out;
}

ExecutedStep StepExecutor::execute(const StepPlan& plan) {
  for (RequestId id : plan.finished_ids) requests_.erase(id);
  ExecutedStep out;
  const StepPlan runnable = admit_new_requests(plan, &out);
  if (runnable.empty()) return out;

  // Sampling requests, in logits order; each has s.num_logits_rows() rows.
  std::vector<const ScheduledRequest*> rows;
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

  sample_rows(rows, &out);
  return out;
}

}  // namespace strata
