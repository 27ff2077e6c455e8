#include "engine/output_processor.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace strata {
namespace {

double seconds(int64_t ns) {
  return static_cast<double>(ns) * 1e-9;
}

}  // namespace

OutputProcessor::OutputProcessor(const Tokenizer& tokenizer, Metrics* metrics,
                                 bool reports_pool_hits)
    : tokenizer_(tokenizer), metrics_(metrics), reports_pool_hits_(reports_pool_hits) {}

void OutputProcessor::add_choice(RequestId id, ChoiceSpec spec) {
  const StreamId stream_id = spec.stream->id();
  auto [it, inserted] = choices_.try_emplace(id, tokenizer_, std::move(spec));
  Choice& c = it->second;
  c.usage.num_prompt_tokens = c.spec.num_prompt_tokens;
  // Migration: bring the text state to where the other engine left it (what
  // it held back is still held back here, and is emitted here).
  const std::vector<int32_t>& resumed = c.spec.resumed_output_tokens;
  std::string replayed;
  for (size_t i = 0; i < resumed.size(); ++i) {
    const bool can_match = static_cast<int64_t>(i + 1) >= c.spec.min_tokens;
    replayed += c.matcher.feed(c.detokenizer.push(resumed[i]), can_match);
  }
  c.usage.num_output_tokens = static_cast<int64_t>(resumed.size());
  if (!resumed.empty()) c.spec.stream->set_resumed_text(std::move(replayed));
  stream_choices_[stream_id].push_back(id);
}

const ChoiceSpec* OutputProcessor::spec_of(RequestId id) const {
  auto it = choices_.find(id);
  return it == choices_.end() ? nullptr : &it->second.spec;
}

std::vector<StreamId> OutputProcessor::stream_ids() const {
  std::vector<StreamId> ids;
  ids.reserve(stream_choices_.size());
  for (const auto& [id, choices] : stream_choices_) ids.push_back(id);
  return ids;
}

std::vector<RequestId> OutputProcessor::choices_of(StreamId stream_id) const {
  auto it = stream_choices_.find(stream_id);
  return it == stream_choices_.end() ? std::vector<RequestId>{} : it->second;
}

void OutputProcessor::on_scheduled(const StepPlan& plan, int64_t now_ns) {
  for (const ScheduledRequest& s : plan.requests) {
    if (!s.is_first_step()) continue;
    auto it = choices_.find(s.request_id);
    if (it == choices_.end() || it->second.first_scheduled_ns >= 0) continue;
    Choice& c = it->second;
    c.first_scheduled_ns = now_ns;
    if (metrics_ == nullptr) continue;
    metrics_->observe_request_queue_time(seconds(now_ns - c.spec.arrival_ns));
    if (reports_pool_hits_ && c.spec.index == 0) {
      metrics_->add_prompt_tokens_cached(
          "pool", std::max<int64_t>(0, s.num_computed_tokens - c.spec.num_connector_tokens));
    }
  }
}

void OutputProcessor::record_token_metrics(Choice& c, const RequestUpdate& u, int64_t now_ns) {
  if (metrics_ == nullptr) return;
  metrics_->add_generation_tokens(1 + static_cast<int64_t>(u.forced_tokens.size()));
  if (c.first_token_ns < 0) {
    metrics_->observe_time_to_first_token(seconds(now_ns - c.spec.arrival_ns));
    if (c.first_scheduled_ns >= 0) {
      metrics_->observe_request_prefill_time(seconds(now_ns - c.first_scheduled_ns));
    }
    if (c.spec.index == 0) metrics_->add_prompt_tokens(u.num_prompt_tokens);
  } else {
    metrics_->observe_inter_token_latency(seconds(now_ns - c.last_token_ns));
  }
}

ProcessedStep OutputProcessor::process(const StepOutput& output, const ExecutedStep& executed,
                                       int64_t now_ns) {
  ProcessedStep processed;
  for (const RequestUpdate& u : output.updates) {
    handle_update(u, executed, now_ns, &processed);
  }
  return processed;
}

bool OutputProcessor::handle_update(const RequestUpdate& u, const ExecutedStep& executed,
                                    int64_t now_ns, ProcessedStep* processed) {
  auto it = choices_.find(u.request_id);
  if (it == choices_.end()) return false;
  Choice& c = it->second;
  // A resumed choice's scheduler request has the earlier outputs as its
  // prompt's tail.
  const int64_t num_resumed = static_cast<int64_t>(c.spec.resumed_output_tokens.size());
  c.usage.num_prompt_tokens = u.num_prompt_tokens - num_resumed;
  c.usage.num_output_tokens = u.num_output_tokens + num_resumed;
  c.usage.num_cached_prompt_tokens =
      std::min(u.num_cached_prompt_tokens, c.usage.num_prompt_tokens);

  TokenEvent e;
  e.choice_index = c.spec.index;
  const bool can_match = c.usage.num_output_tokens >= c.spec.min_tokens;
  // A stop token adds no text unless the request asked for it (vLLM).
  const bool is_stop_token = u.has_new_token && u.ends_on_stop_token && u.forced_tokens.empty();
  if (u.has_new_token) {
    e.token_ids.push_back(u.new_token);
    if (c.spec.wants_logprobs) {
      auto s = executed.samples.find(u.request_id);
      if (s != executed.samples.end()) e.logprobs.push_back(s->second);
    }
    if (!is_stop_token || c.spec.include_stop_str_in_output) {
      e.text = c.matcher.feed(c.detokenizer.push(u.new_token), can_match);
    }
    // Jump-forward: the tokens the grammar forced after the sampled one.
    for (size_t k = 0; k < u.forced_tokens.size(); ++k) {
      const int32_t t = u.forced_tokens[k];
      e.token_ids.push_back(t);
      const bool is_last_stop = u.ends_on_stop_token && k + 1 == u.forced_tokens.size();
      if (is_last_stop && !c.spec.include_stop_str_in_output) continue;
      e.text += c.matcher.feed(c.detokenizer.push(t), can_match);
    }
    record_token_metrics(c, u, now_ns);
    if (c.first_token_ns < 0) c.first_token_ns = now_ns;
    c.last_token_ns = now_ns;
  }

  FinishReason reason = u.finish_reason;
  // The stop token is the update's last token (after accepted drafts or
  // forced tokens, when there are any).
  const int32_t last_token = u.forced_tokens.empty() ? u.new_token : u.forced_tokens.back();
  if (u.has_new_token && u.ends_on_stop_token && !c.matcher.is_stopped() &&
      std::find(c.spec.stop_token_ids.begin(), c.spec.stop_token_ids.end(), last_token) !=
          c.spec.stop_token_ids.end()) {
    e.stop_token_id = last_token;
  }
  if (c.matcher.is_stopped()) {
    reason = FinishReason::kStop;
    e.stop_string = c.matcher.matched();
    e.stop_token_id = -1;
  } else if (reason != FinishReason::kNone && reason != FinishReason::kError) {
    // The stream ends: release the held-back bytes (a stop string may still
    // complete in the detokenizer's last bytes).
    e.text += c.matcher.feed(c.detokenizer.flush(), can_match);
    if (c.matcher.is_stopped()) {
      reason = FinishReason::kStop;
      e.stop_string = c.matcher.matched();
      e.stop_token_id = -1;
    } else {
      e.text += c.matcher.finish();
    }
  }
  if (reason == FinishReason::kNone) {
    c.spec.stream->push(std::move(e));
    return false;
  }
  Status error = Status::ok();
  if (reason == FinishReason::kError) {
    auto err = executed.errors.find(u.request_id);
    error = err != executed.errors.end() ? err->second
                                         : internal_error("engine: the step produced no token");
  }
  if (u.finish_reason == FinishReason::kNone) processed->stopped_ids.push_back(u.request_id);
  processed->finished_ids.push_back(u.request_id);
  send_final(it, std::move(e), reason, now_ns, error);
  return true;
}

void OutputProcessor::finish(RequestId id, FinishReason reason, int64_t now_ns,
                             const Status& error) {
  auto it = choices_.find(id);
  if (it == choices_.end()) return;
  TokenEvent e;
  e.choice_index = it->second.spec.index;
  send_final(it, std::move(e), reason, now_ns, error);
}

void OutputProcessor::send_final(std::unordered_map<RequestId, Choice>::iterator it,
                                 TokenEvent event, FinishReason reason, int64_t now_ns,
                                 const Status& error) {
  Choice& c = it->second;
  event.is_final = true;
  event.finish_reason = reason;
  event.usage = c.usage;
  if (reason == FinishReason::kError) {
    event.error_code = error.is_ok() ? StatusCode::kInternal : error.code();
    event.error_message = error.is_ok() ? "request failed" : error.message();
    if (event.error_code == StatusCode::kInternal) {
      std::fprintf(stderr, "[engine] request %llu failed: %s\n",
                   static_cast<unsigned long long>(it->first), event.error_message.c_str());
    }
  }
  if (metrics_ != nullptr) {
    metrics_->add_finished(reason);
    metrics_->observe_e2e_request_latency(seconds(now_ns - c.spec.arrival_ns));
    if (c.first_token_ns >= 0) {
      metrics_->observe_request_decode_time(seconds(now_ns - c.first_token_ns));
    }
  }
  std::shared_ptr<RequestStream> stream = std::move(c.spec.stream);
  auto sc = stream_choices_.find(stream->id());
  if (sc != stream_choices_.end()) {
    std::erase(sc->second, it->first);
    if (sc->second.empty()) stream_choices_.erase(sc);
  }
  choices_.erase(it);
  stream->push(std::move(event));
}

void OutputProcessor::finish_unadmitted(RequestStream& stream, int32_t num_choices,
                                        int64_t num_prompt_tokens, int64_t arrival_ns,
                                        FinishReason reason, int64_t now_ns, const Status& error) {
  for (int32_t i = 0; i < num_choices; ++i) {
    TokenEvent e;
    e.choice_index = i;
    e.is_final = true;
    e.finish_reason = reason;
    e.usage.num_prompt_tokens = num_prompt_tokens;
    if (reason == FinishReason::kError) {
      e.error_code = error.is_ok() ? StatusCode::kInternal : error.code();
      e.error_message = error.is_ok() ? "request failed" : error.message();
    }
    if (metrics_ != nullptr) {
      metrics_->add_finished(reason);
      metrics_->observe_e2e_request_latency(seconds(now_ns - arrival_ns));
    }
    stream.push(std::move(e));
  }
}

}  // namespace strata
