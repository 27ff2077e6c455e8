#include "engine/engine_core.h"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>

#include "engine/tiered_kv_connector.h"
#include "parallel/process_group.h"
#include "spec/ngram_drafter.h"
#include "spec/suffix_drafter.h"

namespace strata {

StepStats StepStats::of(const StepPlan& plan) {
  StepStats stats;
  for (const ScheduledRequest& s : plan.requests) {
    stats.num_scheduled_tokens += s.num_new_tokens;
    if (s.is_prefill) stats.num_prefill_tokens += s.num_new_tokens;
    if (s.is_sampling) ++stats.num_sampled;
    stats.num_allocated_slots += static_cast<int64_t>(s.block_table.size()) * plan.block_size;
    stats.num_used_slots += s.num_computed_tokens + s.num_new_tokens;
  }
  stats.num_requests = static_cast<int32_t>(plan.requests.size());
  return stats;
}

EngineCore::EngineCore(const Tokenizer& tokenizer, const EngineOptions& options, Metrics* metrics,
                       const Clock* clock)
    : tokenizer_(tokenizer),
      options_(options),
      metrics_(metrics),
      clock_(clock != nullptr ? clock : &steady_clock_) {}

EngineCore::~EngineCore() {
  // Plans still in flight: take their logits, so no last stage is left
  // waiting (until its deadline) to send them.
  if (executor_) {
    while (executor_->num_in_flight() > 0) executor_->finish();
  }
  connector_.reset();
}

Result<std::unique_ptr<EngineCore>> EngineCore::create(const ModelWeights& weights,
                                                       const Tokenizer& tokenizer,
                                                       const EngineOptions& options,
                                                       Metrics* metrics, const Clock* clock,
                                                       std::unique_ptr<KvConnector> connector) {
  STRATA_RETURN_IF_ERROR(options.validate());
  const ModelConfig& config = weights.config();
  STRATA_RETURN_IF_ERROR(options.check_model(config));
  if (tokenizer.vocab_size() > config.vocab_size) {
    return invalid_argument("engine: the tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                            " tokens but the model only " + std::to_string(config.vocab_size));
  }
  std::unique_ptr<EngineCore> core(new EngineCore(tokenizer, options, metrics, clock));
  EngineCore& c = *core;
  c.vocab_size_ = static_cast<int32_t>(config.vocab_size);
  c.max_model_len_ = options.resolved_max_model_len(config);
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) {
    if (tokenizer.is_eog(id)) c.eog_ids_.push_back(id);
  }
  // Each rank of a model-parallel group holds its shard's KV heads and its
  // stage's layers (weights.local_config(); the whole model otherwise).
  const ModelConfig& kv_config = weights.local_config();
  STRATA_ASSIGN_OR_RETURN(
      KvStorage storage,
      KvStorage::create_for_budget(kv_config, options.block_size,
                                   options.resolved_kv_cache_memory_bytes(kv_config)));
  c.kv_storage_ = std::make_unique<KvStorage>(std::move(storage));
  c.pool_ = std::make_unique<ThreadPool>(
      options.num_threads > 0
          ? options.num_threads
          : static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())));
  c.runner_ = std::make_unique<ModelRunner>(weights, *c.kv_storage_, *c.pool_,
                                            options.max_num_batched_tokens);
  c.runner_->profile().set_ceilings(options.ceilings);
  if (metrics != nullptr && options.ceilings.known())
    metrics->set_machine_ceilings(options.ceilings);
  const KvCacheOptions kv_options = options.kv_cache_options(
      static_cast<int32_t>(std::min<int64_t>(c.kv_storage_->num_blocks(), int64_t{1} << 30)));
  STRATA_RETURN_IF_ERROR(kv_options.validate());
  c.kv_cache_ = std::make_unique<KvCacheManager>(kv_options);
  c.limits_ =
      RequestLimits{c.vocab_size_, c.max_model_len_, options.block_size, c.kv_cache_->num_blocks()};
  const SchedulerOptions sched_options = options.scheduler_options(config);
  STRATA_RETURN_IF_ERROR(sched_options.validate());
  c.scheduler_ = std::make_unique<Scheduler>(sched_options, c.kv_cache_.get(), c.clock_);
  c.executor_ = std::make_unique<StepExecutor>(*c.runner_, c.vocab_size_, &tokenizer);
  if (c.executor_->can_pipeline() && weights.group()->options().pipeline_micro_batches) {
    c.pipeline_depth_ = weights.layout().pipeline_parallel_size;
  }
  const SpeculativeConfig& spec = options.speculative;
  if (spec.method == SpeculativeMethod::kNgram) {
    c.drafter_ = std::make_unique<NgramDrafter>(spec.prompt_lookup_min, spec.prompt_lookup_max);
  } else if (spec.method == SpeculativeMethod::kSuffix) {
    c.drafter_ = std::make_unique<SuffixDrafter>(
        SuffixDrafterOptions{spec.suffix_max_tree_depth, spec.suffix_max_cached_requests,
                             spec.suffix_max_spec_factor, spec.suffix_min_token_prob});
  }
  if (c.drafter_) {
    c.scheduler_->set_drafter(c.drafter_.get());
    c.gate_ = std::make_unique<SpeculationGate>(spec.num_speculative_tokens, spec.cost_gating);
    c.scheduler_->set_draft_selector(c.gate_.get());
  }
  if (connector == nullptr && options.kv_tiers.enabled()) {
    STRATA_ASSIGN_OR_RETURN(
        connector, TieredKvConnector::create(weights, options.block_size, options.kv_tiers, nullptr,
                                             metrics, c.clock_));
  }
  if (connector != nullptr && !options.enable_prefix_caching) {
    return invalid_argument("engine: a KV connector needs prefix caching");
  }
  c.connector_ = std::move(connector);
  if (c.connector_) {
    c.connector_->set_wakeup([p = &c] {
      if (p->load_wakeup_) p->load_wakeup_();
    });
  }
  c.outputs_ = std::make_unique<OutputProcessor>(tokenizer, metrics, c.connector_ != nullptr);
  return core;
}

Status EngineCore::check_request(const GenerationRequest& request) const {
  if (request.grammar && request.grammar->trie().vocab_size() != tokenizer_.vocab_size()) {
    return invalid_argument("grammar: compiled for a vocabulary of " +
                            std::to_string(request.grammar->trie().vocab_size()) +
                            " tokens, the model has " + std::to_string(tokenizer_.vocab_size()));
  }
  return limits_.check(request);
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
  if (request.resume) extend_resumed_prompt(request);
  if (connector_ && try_start_load(request, stream, arrival_ns)) return;
  admit_now(std::move(request), std::move(stream), arrival_ns, 0);
}

void EngineCore::admit_now(GenerationRequest request, std::shared_ptr<RequestStream> stream,
                           int64_t arrival_ns, int64_t num_connector_tokens) {
  std::vector<int32_t> stop_ids = request.stop_token_ids;
  if (!request.ignore_eos) stop_ids.insert(stop_ids.end(), eog_ids_.begin(), eog_ids_.end());
  RequestId source_id = 0;
  const int64_t num_resumed =
      request.resume ? static_cast<int64_t>(request.resume->output_tokens.size()) : 0;
  if (request.resume && (request.n != 1 || num_resumed >= request.max_tokens)) {
    outputs_->finish_unadmitted(
        *stream, request.n, static_cast<int64_t>(request.prompt_tokens.size()), arrival_ns,
        FinishReason::kError, clock_->now_ns(),
        invalid_argument("resume: needs n == 1 and fewer outputs than max_tokens"));
    return;
  }
  for (int32_t i = 0; i < request.n; ++i) {
    const RequestId id = next_request_id_++;
    ChoiceSpec c;
    c.stream = stream;
    c.index = i;
    c.min_tokens = request.min_tokens;
    c.wants_logprobs = request.sampling.num_logprobs > 0;
    c.stop = request.stop;
    c.stop_token_ids = request.stop_token_ids;
    c.include_stop_str_in_output = request.include_stop_str_in_output;
    c.skip_special_tokens = request.skip_special_tokens;
    c.arrival_ns = arrival_ns;
    c.num_prompt_tokens = static_cast<int64_t>(request.prompt_tokens.size()) - num_resumed;
    c.num_connector_tokens = i == 0 ? num_connector_tokens : 0;
    c.is_migratable = request.n == 1;
    if (request.resume) c.resumed_output_tokens = request.resume->output_tokens;
    outputs_->add_choice(id, std::move(c));
    RequestSpec spec;
    spec.id = id;
    spec.prompt_tokens = request.prompt_tokens;
    spec.max_tokens = request.max_tokens - static_cast<int32_t>(num_resumed);
    spec.min_tokens = std::max<int32_t>(0, request.min_tokens - static_cast<int32_t>(num_resumed));
    spec.stop_token_ids = stop_ids;
    spec.priority = request.priority;
    spec.cache_salt = request.cache_salt;
    spec.prefix_source_id = source_id;
    spec.sampling = request.sampling;
    spec.sampling.seed = request.sampling.seed + static_cast<uint64_t>(i);
    if (request.resume) {
      spec.sampling.seed = request.resume->seed;
      spec.sampling.resume_num_output_tokens = num_resumed;
      spec.sampling.resume_rng_draws = request.resume->rng_draws;
    }
    spec.grammar = request.grammar;
    if (Status s = scheduler_->add_request(std::move(spec)); !s) {
      outputs_->finish(id, FinishReason::kError, clock_->now_ns(), s);
      continue;
    }
    if (i == 0 && request.n > 1) source_id = id;
  }
  publish_state();
}

void EngineCore::abort(StreamId stream_id) {
  const int64_t now = clock_->now_ns();
  if (auto l = loads_.find(stream_id); l != loads_.end()) {
    connector_->cancel_load(stream_id);
    const PendingLoad load = std::move(l->second);
    loads_.erase(l);
    publish_state();
    outputs_->finish_unadmitted(*load.stream, load.request.n,
                                static_cast<int64_t>(load.request.prompt_tokens.size()),
                                load.arrival_ns, FinishReason::kAbort, now);
    return;
  }
  const std::vector<RequestId> ids = outputs_->choices_of(stream_id);
  // Free the blocks and publish the gauges before the final events, so a
  // reader that sees the abort also sees its blocks returned.
  for (RequestId id : ids) {
    scheduler_->finish_request(id, FinishReason::kAbort);
    if (connector_) connector_->request_finished(id);
  }
  if (!scheduler_->has_unfinished_requests()) release_finished();
  publish_state();
  for (RequestId id : ids) outputs_->finish(id, FinishReason::kAbort, now);
}

void EngineCore::abort_all() {
  std::vector<StreamId> ids;
  for (const auto& [stream_id, load] : loads_) ids.push_back(stream_id);
  for (StreamId id : ids) abort(id);
  for (StreamId id : outputs_->stream_ids()) abort(id);
}

StepStats EngineCore::step() {
  if (pipeline_depth_ > 1) return step_pipelined();
  if (connector_) finish_loads();
  const int64_t t0 = clock_->now_ns();
  const int32_t max_drafts = gate_ ? gate_->drafts_for_step(scheduler_->num_running()) : 0;
  const StepPlan plan = scheduler_->schedule(max_drafts);
  if (plan.empty()) {
    executor_->execute(plan);  // drops the state of plan.finished_ids
    return StepStats{};
  }
  outputs_->on_scheduled(plan, t0);
  const ExecutedStep executed = executor_->execute(plan);
  return finish_step(plan, executed, t0);
}

StepStats EngineCore::finish_step(const StepPlan& plan, const ExecutedStep& executed, int64_t t0) {
  StepStats stats = StepStats::of(plan);
  if (connector_) save_kv(plan, executed);
  const StepOutput output = scheduler_->update(plan, executed.result);
  int64_t num_drafting = 0;
  for (const RequestUpdate& u : output.updates) {
    if (u.num_draft_tokens == 0) continue;
    ++num_drafting;
    stats.num_draft_tokens += u.num_draft_tokens;
    stats.num_accepted_drafts += u.num_accepted_drafts;
  }
  const ProcessedStep processed = outputs_->process(output, executed, clock_->now_ns());
  // Stop strings: the scheduler still runs these; free their blocks now.
  for (RequestId id : processed.stopped_ids) scheduler_->finish_request(id, FinishReason::kStop);
  if (connector_) {
    for (RequestId id : processed.finished_ids) connector_->request_finished(id);
  }

  if (!scheduler_->has_unfinished_requests()) release_finished();
  publish_state();
  stats.seconds = static_cast<double>(clock_->now_ns() - t0) * 1e-9;
  if (gate_) {
    gate_->observe({stats.num_sampled, stats.num_draft_tokens, stats.num_accepted_drafts,
                    stats.seconds, stats.num_prefill_tokens == 0, plan.draft_proposal_seconds});
  }
  if (metrics_ != nullptr) {
    metrics_->observe_step(stats.num_prefill_tokens, stats.num_sampled + stats.num_accepted_drafts,
                           stats.seconds);
    metrics_->add_forward_profile(runner_->profile().take());
    if (gate_) {
      const GateStats& g = gate_->stats();
      metrics_->observe_spec_decode(
          {num_drafting, stats.num_draft_tokens, stats.num_accepted_drafts, g.acceptance_rate(),
           g.tokens_per_step, g.cost_ratio, g.realised_gain, g.num_vetoes, g.is_drafting});
    }
  }
  return stats;
}

StepStats EngineCore::step_pipelined() {
  if (connector_) finish_loads();
  const int64_t t0 = clock_->now_ns();
  while (static_cast<int32_t>(in_flight_.size()) < pipeline_depth_) {
    const int32_t max_drafts = gate_ ? gate_->drafts_for_step(scheduler_->num_running()) : 0;
    // About 1/P of the live requests per plan, so the stages get equal
    // micro-batches.
    const int32_t live = scheduler_->num_running() + scheduler_->num_waiting();
    const int32_t cap = std::max(1, (live + pipeline_depth_ - 1) / pipeline_depth_);
    StepPlan plan = scheduler_->schedule_micro_batch(max_drafts, cap);
    if (plan.empty()) {
      executor_->execute(plan);  // drops the state of plan.finished_ids
      break;
    }
    outputs_->on_scheduled(plan, t0);
    if (!executor_->launch(plan)) {
      // A batch that does not validate: run it alone, once nothing else is
      // in flight, so the executor can find the culprits.
      drain_pipeline();
      const ExecutedStep executed = executor_->execute(plan);
      return finish_step(plan, executed, t0);
    }
    if (!in_flight_.empty()) ++num_overlapped_launches_;
    in_flight_.push_back(std::move(plan));
  }
  if (in_flight_.empty()) return StepStats{};
  return finish_oldest(t0);
}

StepStats EngineCore::finish_oldest(int64_t t0) {
  const StepPlan plan = std::move(in_flight_.front());
  in_flight_.pop_front();
  const ExecutedStep executed = executor_->finish();
  return finish_step(plan, executed, t0);
}

void EngineCore::drain_pipeline() {
  while (!in_flight_.empty()) finish_oldest(clock_->now_ns());
}

void EngineCore::release_finished() {
  // An empty plan carries the finished ids to the executor.
  executor_->execute(scheduler_->schedule());
}

void EngineCore::flush_kv_connector() {
  if (!connector_) return;
  drain_pipeline();  // the workers answer a flush on the channel the logits use
  connector_->flush();
}

void EngineCore::publish_state() {
  if (metrics_ == nullptr) return;
  const SchedulerStats s = scheduler_->stats();
  metrics_->set_scheduler_state(s.num_running, s.num_waiting, s.kv_usage, s.prefix_query_tokens,
                                s.prefix_hit_tokens, s.num_preemptions);
  metrics_->set_num_requests_loading(static_cast<int64_t>(loads_.size()));
  metrics_->set_load_state(s.num_pending_prefill_tokens, s.num_free_blocks);
}

bool EngineCore::try_start_load(GenerationRequest& request,
                                const std::shared_ptr<RequestStream>& stream, int64_t arrival_ns) {
  std::vector<BlockHash> hashes =
      block_hashes_of(request.prompt_tokens, options_.block_size, request.cache_salt);
  const PrefixHit hit = kv_cache_->find_prefix(request.prompt_tokens, hashes);
  const std::string_view peer =
      request.resume ? std::string_view(request.resume->kv_peer) : std::string_view();
  const KvLoadQuery query{stream->id(),   request.prompt_tokens, hashes,
                          hit.num_tokens, request.cache_salt,    peer};
  if (connector_->start_load(query) <= 0) return false;
  loads_.emplace(stream->id(),
                 PendingLoad{std::move(request), stream, arrival_ns, std::move(hashes)});
  publish_state();
  return true;
}

void EngineCore::finish_loads() {
  const std::vector<KvLoadReady> ready = connector_->poll_loads();
  // Writing a load waits for every rank's answer, which a last stage sends
  // only after the logits of the plans before it.
  if (!ready.empty()) drain_pipeline();
  for (const KvLoadReady& r : ready) {
    auto it = loads_.find(r.load_id);
    if (it == loads_.end()) continue;  // aborted while loading
    PendingLoad load = std::move(it->second);
    loads_.erase(it);
    const int64_t num_loaded = insert_connector_kv(*connector_, r, load.request.prompt_tokens,
                                                   load.block_hashes, *kv_cache_, *kv_storage_);
    admit_now(std::move(load.request), std::move(load.stream), load.arrival_ns, num_loaded);
  }
  if (!ready.empty()) publish_state();
}

void EngineCore::save_kv(const StepPlan& plan, const ExecutedStep& executed) {
  for (const ScheduledRequest& s : plan.requests) {
    const Request* r = scheduler_->find(s.request_id);
    if (r == nullptr || executed.errors.count(s.request_id)) continue;
    KvSaveRequest save{s.request_id, r->tokens, r->block_hashes, s.block_table,
                       // Not the drafts: a rejected one's K/V is garbage, an
                       // accepted one's is saved with the next step's.
                       s.num_computed_tokens + s.num_new_tokens - s.num_draft_tokens,
                       s.is_first_step(), s.num_computed_tokens};
    connector_->save(save, *kv_storage_);
  }
}

void EngineCore::extend_resumed_prompt(GenerationRequest& request) {
  const std::vector<int32_t>& out = request.resume->output_tokens;
  request.prompt_tokens.insert(request.prompt_tokens.end(), out.begin(), out.end());
}

bool EngineCore::migrate(StreamId stream_id, const std::string& kv_peer) {
  const std::vector<RequestId> ids = outputs_->choices_of(stream_id);
  if (ids.size() != 1) return false;
  const RequestId id = ids[0];
  const ChoiceSpec* c = outputs_->spec_of(id);
  const Request* r = scheduler_->find(id);
  if (c == nullptr || r == nullptr || !c->is_migratable) return false;
  // The scheduler's prompt of a request that moved before has the earlier
  // outputs as its tail.
  const size_t num_prompt =
      static_cast<size_t>(r->num_prompt_tokens) - c->resumed_output_tokens.size();
  auto state = std::make_shared<ResumeState>();
  state->prompt_tokens.assign(r->tokens.begin(),
                              r->tokens.begin() + static_cast<std::ptrdiff_t>(num_prompt));
  state->output_tokens.assign(r->tokens.begin() + static_cast<std::ptrdiff_t>(num_prompt),
                              r->tokens.end());
  state->seed = r->spec.sampling.seed;
  const SequenceSampler* sampler = executor_->sampler_of(id);
  state->rng_draws =
      sampler != nullptr ? sampler->num_rng_draws() : r->spec.sampling.resume_rng_draws;
  state->kv_peer = kv_peer;
  std::shared_ptr<RequestStream> stream = c->stream;
  // As abort(): blocks back (their full ones stay in the prefix cache, for
  // the peer's pull) and gauges published before the final event.
  scheduler_->finish_request(id, FinishReason::kAbort);
  if (connector_) connector_->request_finished(id);
  if (!scheduler_->has_unfinished_requests()) release_finished();
  publish_state();
  stream->set_resume_state(std::move(state));
  outputs_->finish(id, FinishReason::kAbort, clock_->now_ns());
  return true;
}

}  // namespace strata
