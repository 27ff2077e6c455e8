#include "engine/engine_core.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <utility>

namespace strata {

EngineCore::EngineCore(const ModelWeights& weights, const Tokenizer& tokenizer,
                       const EngineOptions& options, Metrics* metrics, const Clock* clock)
    : weights_(weights),
      tokenizer_(tokenizer),
      options_(options),
      metrics_(metrics),
      clock_(clock != nullptr ? clock : &steady_clock_) {}

EngineCore::~EngineCore() = default;

Result<std::unique_ptr<EngineCore>> EngineCore::create(const ModelWeights& weights,
                                                       const Tokenizer& tokenizer,
                                                       const EngineOptions& options,
                                                       Metrics* metrics, const Clock* clock) {
  STRATA_RETURN_IF_ERROR(options.validate());
  const ModelConfig& config = weights.config();
  if (tokenizer.vocab_size() > config.vocab_size) {
    return invalid_argument("engine: the tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                            " tokens but the model only " + std::to_string(config.vocab_size));
  }
  std::unique_ptr<EngineCore> core(new EngineCore(weights, tokenizer, options, metrics, clock));
  core->vocab_size_ = static_cast<int32_t>(config.vocab_size);
  core->max_model_len_ = options.max_model_len > 0 ? options.max_model_len : config.context_length;
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.is_eog(id)) core->eog_ids_.push_back(id);
  }

  STRATA_ASSIGN_OR_RETURN(
      KvStorage storage,
      KvStorage::create_for_budget(config, options.block_size, options.kv_cache_memory_bytes));
  core->kv_storage_ = std::make_unique<KvStorage>(std::move(storage));
  const int32_t num_threads =
      options.num_threads > 0
          ? options.num_threads
          : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  core->pool_ = std::make_unique<ThreadPool>(num_threads);
  core->runner_ = std::make_unique<ModelRunner>(weights, *core->kv_storage_, *core->pool_,
                                                options.max_num_batched_tokens);

  KvCacheOptions kv_options;
  kv_options.block_size = options.block_size;
  kv_options.num_blocks =
      static_cast<int32_t>(std::min<int64_t>(core->kv_storage_->num_blocks(), int64_t{1} << 30));
  kv_options.enable_prefix_caching = options.enable_prefix_caching;
  STRATA_RETURN_IF_ERROR(kv_options.validate());
  core->kv_cache_ = std::make_unique<KvCacheManager>(kv_options);

  SchedulerOptions sched_options;
  sched_options.max_num_seqs = options.max_num_seqs;
  sched_options.max_num_batched_tokens = options.max_num_batched_tokens;
  sched_options.max_prefill_tokens = options.max_prefill_tokens;
  sched_options.max_model_len = core->max_model_len_;
  sched_options.policy = options.policy;
  STRATA_RETURN_IF_ERROR(sched_options.validate());
  core->scheduler_ =
      std::make_unique<Scheduler>(sched_options, core->kv_cache_.get(), core->clock_);
  core->executor_ = std::make_unique<StepExecutor>(*core->runner_, core->vocab_size_);
  return core;
}

Status EngineCore::check_request(const GenerationRequest& request) const {
  if (request.prompt_tokens.empty()) return invalid_argument("request: the prompt is empty");
  for (int32_t id : request.prompt_tokens) {
    if (id < 0 || id >= vocab_size_) {
      return invalid_argument("request: prompt token id " + std::to_string(id) +
                              " is outside the vocabulary [0, " + std::to_string(vocab_size_) +
                              ")");
    }
  }
  if (request.n < 1 || request.n > 256) return invalid_argument("request: n must be in [1, 256]");
  if (request.max_tokens < 1) return invalid_argument("request: max_tokens must be >= 1");
  if (request.min_tokens < 0 || request.min_tokens > request.max_tokens) {
    return invalid_argument("request: min_tokens must be in [0, max_tokens]");
  }
  for (int32_t id : request.stop_token_ids) {
    if (id < 0 || id >= vocab_size_) {
      return invalid_argument("request: stop token id " + std::to_string(id) +
                              " is outside the vocabulary");
    }
  }
  return Status::ok();
}

std::shared_ptr<RequestStream> EngineCore::make_stream(int32_t num_choices) {
  return std::make_shared<RequestStream>(next_stream_id_.fetch_add(1), num_choices);
}

Result<std::shared_ptr<RequestStream>> EngineCore::add_request(GenerationRequest request) {
  STRATA_RETURN_IF_ERROR(check_request(request));
  std::shared_ptr<RequestStream> stream = make_stream(request.n);
  admit(std::move(request), stream);
  return stream;
}

void EngineCore::admit(GenerationRequest request, std::shared_ptr<RequestStream> stream,
                       int64_t arrival_ns) {
  if (arrival_ns < 0) arrival_ns = clock_->now_ns();
  std::vector<int32_t> stop_ids = request.stop_token_ids;
  if (!request.ignore_eos) stop_ids.insert(stop_ids.end(), eog_ids_.begin(), eog_ids_.end());
  RequestId source_id = 0;
  for (int32_t i = 0; i < request.n; ++i) {
    const RequestId id = next_request_id_++;
    RequestSpec spec;
    spec.id = id;
    spec.prompt_tokens = request.prompt_tokens;
    spec.max_tokens = request.max_tokens;
    spec.min_tokens = request.min_tokens;
    spec.stop_token_ids = stop_ids;
    spec.ignore_eos = false;  // EOS is already left out of stop_ids
    spec.priority = request.priority;
    spec.cache_salt = request.cache_salt;
    spec.prefix_source_id = source_id;
    spec.sampling = request.sampling;
    spec.sampling.seed = request.sampling.seed + static_cast<uint64_t>(i);

    auto [it, inserted] = choices_.try_emplace(id, tokenizer_, request.stop);
    Choice& c = it->second;
    c.stream = stream;
    c.stream_id = stream->id();
    c.index = i;
    c.min_tokens = request.min_tokens;
    c.wants_logprobs = request.sampling.num_logprobs > 0;
    c.arrival_ns = arrival_ns;
    c.usage.num_prompt_tokens = static_cast<int64_t>(request.prompt_tokens.size());
    stream_choices_[c.stream_id].push_back(id);

    if (Status s = scheduler_->add_request(std::move(spec)); !s) {
      TokenEvent e;
      e.error_message = s.message();
      finish_choice(id, std::move(e), FinishReason::kError, clock_->now_ns());
      continue;
    }
    if (i == 0 && request.n > 1) source_id = id;
  }
  publish_scheduler_state();
}

void EngineCore::abort(uint64_t stream_id) {
  auto it = stream_choices_.find(stream_id);
  if (it == stream_choices_.end()) return;
  const std::vector<RequestId> ids = it->second;
  const int64_t now = clock_->now_ns();
  // Free the blocks and publish the gauges before the final events, so a
  // reader that sees the abort also sees its blocks returned.
  for (RequestId id : ids) scheduler_->finish_request(id, FinishReason::kAbort);
  publish_scheduler_state();
  for (RequestId id : ids) finish_choice(id, TokenEvent{}, FinishReason::kAbort, now);
}

void EngineCore::abort_all() {
  std::vector<uint64_t> ids;
  for (const auto& [stream_id, choices] : stream_choices_) ids.push_back(stream_id);
  for (uint64_t id : ids) abort(id);
}

void EngineCore::finish_choice(RequestId id, TokenEvent event, FinishReason reason,
                               int64_t now_ns) {
  auto it = choices_.find(id);
  if (it == choices_.end()) return;
  Choice& c = it->second;
  executor_->release(id);
  event.choice_index = c.index;
  event.is_final = true;
  event.finish_reason = reason;
  event.usage = c.usage;
  if (reason == FinishReason::kError && event.error_message.empty()) {
    event.error_message = "request failed";
  }
  if (metrics_ != nullptr) {
    metrics_->add_finished(reason);
    metrics_->observe_e2e_request_latency(seconds(now_ns - c.arrival_ns));
    if (c.first_token_ns >= 0) {
      metrics_->observe_request_decode_time(seconds(now_ns - c.first_token_ns));
    }
  }
  std::shared_ptr<RequestStream> stream = std::move(c.stream);
  auto sc = stream_choices_.find(c.stream_id);
  if (sc != stream_choices_.end()) {
    std::erase(sc->second, id);
    if (sc->second.empty()) stream_choices_.erase(sc);
  }
  choices_.erase(it);
  stream->push(std::move(event));
}

bool EngineCore::handle_update(const RequestUpdate& u, const ExecutedStep& executed,
                               int64_t now_ns) {
  auto it = choices_.find(u.request_id);
  if (it == choices_.end()) return false;
  Choice& c = it->second;
  c.usage.num_prompt_tokens = u.num_prompt_tokens;
  c.usage.num_output_tokens = u.num_output_tokens;
  c.usage.num_cached_prompt_tokens = u.num_cached_prompt_tokens;

  TokenEvent e;
  e.choice_index = c.index;
  if (u.has_new_token) {
    e.token_ids.push_back(u.new_token);
    if (c.wants_logprobs) {
      auto s = executed.samples.find(u.request_id);
      if (s != executed.samples.end()) e.logprobs.push_back(s->second);
    }
    const bool can_match = u.num_output_tokens >= c.min_tokens;
    e.text = c.matcher.feed(c.detokenizer.push(u.new_token), can_match);
    if (metrics_ != nullptr) {
      metrics_->add_generation_tokens(1);
      if (c.first_token_ns < 0) {
        metrics_->observe_time_to_first_token(seconds(now_ns - c.arrival_ns));
        if (c.first_scheduled_ns >= 0) {
          metrics_->observe_request_prefill_time(seconds(now_ns - c.first_scheduled_ns));
        }
        if (c.index == 0) metrics_->add_prompt_tokens(u.num_prompt_tokens);
      } else {
        metrics_->observe_inter_token_latency(seconds(now_ns - c.last_token_ns));
      }
    }
    if (c.first_token_ns < 0) c.first_token_ns = now_ns;
    c.last_token_ns = now_ns;
  }

  FinishReason reason = u.finish_reason;
  if (c.matcher.is_stopped()) {
    reason = FinishReason::kStop;
  } else if (reason != FinishReason::kNone && reason != FinishReason::kError) {
    // The stream ends: release the held-back bytes (a stop string may still
    // complete in the detokenizer's last bytes).
    e.text += c.matcher.feed(c.detokenizer.flush(), u.num_output_tokens >= c.min_tokens);
    if (c.matcher.is_stopped()) {
      reason = FinishReason::kStop;
    } else {
      e.text += c.matcher.finish();
    }
  }
  if (reason == FinishReason::kNone) {
    c.stream->push(std::move(e));
    return false;
  }
  if (reason == FinishReason::kError) {
    auto err = executed.errors.find(u.request_id);
    if (err != executed.errors.end()) e.error_message = err->second;
  }
  const bool is_still_scheduled = u.finish_reason == FinishReason::kNone;
  finish_choice(u.request_id, std::move(e), reason, now_ns);
  return is_still_scheduled;
}

StepStats EngineCore::step() {
  StepStats stats;
  const int64_t t0 = clock_->now_ns();
  const StepPlan plan = scheduler_->schedule();
  if (plan.empty()) return stats;
  for (const ScheduledRequest& s : plan.requests) {
    stats.num_scheduled_tokens += s.num_new_tokens;
    if (s.is_prefill) stats.num_prefill_tokens += s.num_new_tokens;
    if (s.is_sampling) ++stats.num_sampled;
    stats.num_allocated_slots += static_cast<int64_t>(s.block_table.size()) * plan.block_size;
    stats.num_used_slots += s.num_computed_tokens + s.num_new_tokens;
    if (s.is_first_step) {
      auto it = choices_.find(s.request_id);
      if (it != choices_.end() && it->second.first_scheduled_ns < 0) {
        it->second.first_scheduled_ns = t0;
        if (metrics_ != nullptr) {
          metrics_->observe_request_queue_time(seconds(t0 - it->second.arrival_ns));
        }
      }
    }
  }
  stats.num_requests = static_cast<int32_t>(plan.requests.size());

  const ExecutedStep executed = executor_->execute(plan, *scheduler_);
  const StepOutput output = scheduler_->update(plan, executed.result);
  const int64_t now = clock_->now_ns();
  std::vector<RequestId> stopped;
  for (const RequestUpdate& u : output.updates) {
    if (handle_update(u, executed, now)) stopped.push_back(u.request_id);
  }
  // Stop strings: the scheduler still runs these; free their blocks now.
  for (RequestId id : stopped) scheduler_->finish_request(id, FinishReason::kStop);
  publish_scheduler_state();
  stats.seconds = seconds(clock_->now_ns() - t0);
  return stats;
}

void EngineCore::publish_scheduler_state() {
  if (metrics_ == nullptr) return;
  const SchedulerStats s = scheduler_->stats();
  metrics_->set_scheduler_state(s.num_running, s.num_waiting, s.kv_usage, s.prefix_query_tokens,
                                s.prefix_hit_tokens, s.num_preemptions);
}

}  // namespace strata
