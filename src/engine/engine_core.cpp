#include "engine/engine_core.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>

#include "kvtier/chunk_io.h"

namespace strata {
namespace {

// The context length at which a prompt token's attention costs as much as
// its weight matmuls (see EngineOptions::prefill_attention_cost); 0 = off.
int64_t prefill_cost_context_len(const ModelConfig& c, double attention_cost) {
  if (attention_cost <= 0.0) return 0;
  const double hidden = static_cast<double>(c.hidden_dim);
  const double matmul_macs =
      static_cast<double>(c.num_layers) *
      (hidden * static_cast<double>(c.q_dim() + 2 * c.kv_dim()) +
       static_cast<double>(c.q_dim()) * hidden + 3.0 * hidden * static_cast<double>(c.ffn_dim));
  // Scores and the weighted sum of V: two MACs per head dimension.
  const double attention_macs_per_position = static_cast<double>(c.num_layers) *
                                             static_cast<double>(c.num_heads) *
                                             static_cast<double>(c.head_dim) * 2.0;
  const double len = matmul_macs / (attention_macs_per_position * attention_cost);
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(len)));
}

// The tiers' own counters, as Metrics exports them.
std::vector<TierMetricsSnapshot> tier_metrics(const KvTierManager& tiers) {
  std::vector<TierMetricsSnapshot> out;
  for (size_t i = 0; i < tiers.num_tiers(); ++i) {
    const TierStats st = tiers.tier_stats(i);
    TierMetricsSnapshot m;
    m.tier = std::string(tiers.tier_name(i));
    m.hits = st.hits;
    m.misses = st.misses;
    m.bytes_read = st.bytes_read;
    m.bytes_written = st.bytes_written;
    m.evictions = st.evictions;
    m.errors = st.errors;
    m.dropped_stores = st.dropped_stores;
    m.stored_chunks = st.stored_chunks;
    m.stored_bytes = st.stored_bytes;
    for (auto [dst, src] :
         {std::pair{&m.get_latency, &st.get_latency}, std::pair{&m.put_latency, &st.put_latency}}) {
      dst->bounds = src->bounds;
      dst->counts = src->counts;
      dst->sum = src->sum;
      dst->count = src->count;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

EngineCore::EngineCore(const ModelWeights& weights, const Tokenizer& tokenizer,
                       const EngineOptions& options, Metrics* metrics, const Clock* clock)
    : weights_(weights),
      tokenizer_(tokenizer),
      options_(options),
      metrics_(metrics),
      clock_(clock != nullptr ? clock : &steady_clock_) {}

EngineCore::~EngineCore() {
  if (metrics_ != nullptr) metrics_->set_tier_source(nullptr);
  loader_.reset();  // borrows tiers_
  if (tiers_) tiers_->flush();
}

Result<std::unique_ptr<EngineCore>> EngineCore::create(const ModelWeights& weights,
                                                       const Tokenizer& tokenizer,
                                                       const EngineOptions& options,
                                                       Metrics* metrics, const Clock* clock,
                                                       std::unique_ptr<KvTierManager> tiers) {
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
  sched_options.prefill_cost_context_len =
      prefill_cost_context_len(weights.config(), options.prefill_attention_cost);
  sched_options.max_model_len = core->max_model_len_;
  sched_options.policy = options.policy;
  STRATA_RETURN_IF_ERROR(sched_options.validate());
  core->scheduler_ =
      std::make_unique<Scheduler>(sched_options, core->kv_cache_.get(), core->clock_);
  core->executor_ = std::make_unique<StepExecutor>(*core->runner_, core->vocab_size_);

  if (tiers == nullptr && options.kv_tiers.enabled()) {
    STRATA_ASSIGN_OR_RETURN(
        tiers,
        KvTierManager::create(options.kv_tiers, static_cast<size_t>(options.kv_tiers.chunk_tokens) *
                                                    kv_bytes_per_token(config)));
  }
  if (tiers != nullptr) {
    const int32_t chunk_tokens = options.kv_tiers.chunk_tokens;
    if (chunk_tokens <= 0 || chunk_tokens % options.block_size != 0) {
      return invalid_argument(
          "engine: --kv-chunk-tokens must be a positive multiple of --block-size");
    }
    if (!options.enable_prefix_caching) {
      return invalid_argument("engine: the KV tiers need prefix caching");
    }
    core->chunk_tokens_ = chunk_tokens;
    core->chunk_payload_bytes_ = static_cast<size_t>(chunk_tokens) * kv_bytes_per_token(config);
    core->fingerprint_ =
        compute_model_fingerprint(weights.file(), config, options.block_size, chunk_tokens);
    core->tiers_ = std::move(tiers);
    EngineCore* c = core.get();
    core->loader_ = std::make_unique<KvLoader>(*core->tiers_, [c] {
      if (c->load_wakeup_) c->load_wakeup_();
    });
    if (metrics != nullptr) {
      KvTierManager* t = core->tiers_.get();
      metrics->set_tier_source([t] { return tier_metrics(*t); });
    }
  }
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
  if (loader_ && try_start_load(request, stream, arrival_ns)) {
    publish_loading_state();
    return;
  }
  admit_now(std::move(request), std::move(stream), arrival_ns, LoadResult{});
}

void EngineCore::admit_now(GenerationRequest request, std::shared_ptr<RequestStream> stream,
                           int64_t arrival_ns, const LoadResult& load) {
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
    c.cache_salt = request.cache_salt;
    c.num_stored_chunks = load.num_known_chunks;
    if (i == 0) c.num_tier_loaded_tokens = load.num_loaded_tokens;
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
  if (auto l = loads_.find(stream_id); l != loads_.end()) {
    loader_->cancel(stream_id);
    const PendingLoad load = std::move(l->second);
    loads_.erase(l);
    publish_loading_state();
    finish_unadmitted(load, FinishReason::kAbort);
    return;
  }
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
  for (const auto& [stream_id, load] : loads_) ids.push_back(stream_id);
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
  if (loader_) finish_loads();
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
          if (tiers_ && it->second.index == 0) {
            // The pool's own share of the hit (the rest was loaded from tiers).
            metrics_->add_prompt_tokens_cached(
                "pool",
                std::max<int64_t>(0, s.num_computed_tokens - it->second.num_tier_loaded_tokens));
          }
        }
      }
    }
  }
  stats.num_requests = static_cast<int32_t>(plan.requests.size());

  const ExecutedStep executed = executor_->execute(plan, *scheduler_);
  if (tiers_) store_new_chunks(plan, executed);
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

void EngineCore::flush_kv_tiers() {
  if (tiers_) tiers_->flush();
}

void EngineCore::publish_loading_state() {
  if (metrics_ != nullptr) metrics_->set_num_requests_loading(static_cast<int64_t>(loads_.size()));
}

void EngineCore::chain_hashes(std::span<const int32_t> tokens, std::string_view cache_salt,
                              int64_t num_blocks, std::vector<BlockHash>* hashes) const {
  const int64_t bs = options_.block_size;
  for (int64_t i = static_cast<int64_t>(hashes->size()); i < num_blocks; ++i) {
    const BlockHash& parent = i == 0 ? root_block_hash() : (*hashes)[i - 1];
    hashes->push_back(
        hash_block(parent, tokens.subspan(i * bs, bs), i == 0 ? cache_salt : std::string_view()));
  }
}

bool EngineCore::try_start_load(GenerationRequest& request,
                                const std::shared_ptr<RequestStream>& stream, int64_t arrival_ns) {
  const std::vector<int32_t>& prompt = request.prompt_tokens;
  const int64_t num_prompt = static_cast<int64_t>(prompt.size());
  // Never the last prompt token: its logits are needed (as find_prefix).
  const int64_t max_chunks = (num_prompt - 1) / chunk_tokens_;
  if (max_chunks == 0 || num_prompt + request.max_tokens > max_model_len_) return false;
  const KvCacheManager::SeqId probe = next_load_seq_id_++;
  const PrefixHit hit = kv_cache_->find_prefix(probe, prompt, request.cache_salt);
  kv_cache_->remove(probe);
  const int64_t first_chunk = hit.num_tokens / chunk_tokens_;
  if (first_chunk >= max_chunks) return false;
  const int64_t blocks_per_chunk = chunk_tokens_ / options_.block_size;
  std::vector<BlockHash> hashes;
  chain_hashes(prompt, request.cache_salt, max_chunks * blocks_per_chunk, &hashes);
  PendingLoad load;
  load.first_chunk = first_chunk;
  for (int64_t k = first_chunk; k < max_chunks; ++k) {
    load.keys.push_back(make_chunk_key(fingerprint_, hashes[(k + 1) * blocks_per_chunk - 1]));
  }
  // A RAM-only cache answers at once: skip the loader round trip on a miss.
  if (tiers_->num_tiers() == 1 && tiers_->tier(0).is_memory() &&
      !tiers_->memory_contains(load.keys[0])) {
    return false;
  }
  load.stream = stream;
  load.arrival_ns = arrival_ns;
  load.load_start_ns = clock_->now_ns();
  load.request = std::move(request);
  const uint64_t id = stream->id();
  loader_->submit(KvLoader::Job{id, load.keys});
  loads_.emplace(id, std::move(load));
  return true;
}

void EngineCore::finish_loads() {
  std::vector<KvLoader::Done> done = loader_->take_done();
  if (done.empty()) return;
  const int64_t now = clock_->now_ns();
  for (KvLoader::Done& d : done) {
    auto it = loads_.find(d.id);
    if (it == loads_.end()) continue;  // aborted while loading
    PendingLoad load = std::move(it->second);
    loads_.erase(it);
    if (metrics_ != nullptr) metrics_->observe_kv_load_time(seconds(now - load.load_start_ns));
    const LoadResult result = insert_loaded(load, d.loaded);
    admit_now(std::move(load.request), std::move(load.stream), load.arrival_ns, result);
  }
  publish_loading_state();
}

EngineCore::LoadResult EngineCore::insert_loaded(const PendingLoad& load,
                                                 const KvTierManager::Loaded& loaded) {
  LoadResult result;
  const std::vector<int32_t>& prompt = load.request.prompt_tokens;
  const int64_t bs = options_.block_size;
  const int64_t blocks_per_chunk = chunk_tokens_ / bs;
  // The usable run: well-formed chunks with the keys asked for.
  size_t num_ok = 0;
  while (num_ok < loaded.chunks.size() && num_ok < load.keys.size() &&
         num_ok < loaded.tier_index.size()) {
    const KvChunkHandle& c = loaded.chunks[num_ok];
    if (!c || c->key != load.keys[num_ok] || c->num_tokens != chunk_tokens_ ||
        c->payload.size() != chunk_payload_bytes_) {
      break;
    }
    ++num_ok;
  }
  if (num_ok == 0) return result;
  int64_t end_tokens = (load.first_chunk + static_cast<int64_t>(num_ok)) * chunk_tokens_;
  const KvCacheManager::SeqId seq = next_load_seq_id_++;
  const PrefixHit hit = kv_cache_->find_prefix(seq, prompt, load.request.cache_salt);
  // The pool may have changed while loading: the loaded run must still
  // continue the pool's hit, and the pool must have room for it.
  if (hit.num_tokens >= end_tokens || hit.num_tokens < load.first_chunk * chunk_tokens_ ||
      !kv_cache_->allocate(seq, hit, end_tokens)) {
    kv_cache_->remove(seq);
    result.num_known_chunks = std::max<int64_t>(load.first_chunk, hit.num_tokens / chunk_tokens_);
    return result;
  }
  const std::vector<int32_t> table = kv_cache_->block_table(seq);
  const int64_t first_new_block = hit.num_tokens / bs;
  std::vector<int32_t> ids(static_cast<size_t>(blocks_per_chunk));
  for (size_t j = 0; j < num_ok; ++j) {
    const int64_t chunk = load.first_chunk + static_cast<int64_t>(j);
    for (int64_t b = 0; b < blocks_per_chunk; ++b) {
      const int64_t logical = chunk * blocks_per_chunk + b;
      ids[static_cast<size_t>(b)] = logical < first_new_block ? -1 : table[logical];
    }
    if (Status s = scatter_chunk_payload(*kv_storage_, loaded.chunks[j]->payload, ids); !s) {
      std::fprintf(stderr, "[kv] chunk %s not loaded: %s\n", load.keys[j].hex().c_str(),
                   s.message().c_str());
      end_tokens = chunk * chunk_tokens_;
      break;
    }
    const int64_t n = (chunk + 1) * chunk_tokens_ - std::max(chunk * chunk_tokens_, hit.num_tokens);
    result.num_loaded_tokens += n;
    if (metrics_ != nullptr) {
      metrics_->add_prompt_tokens_cached(
          std::string(tiers_->tier_name(static_cast<size_t>(loaded.tier_index[j]))), n);
    }
  }
  kv_cache_->commit_computed(seq, prompt, end_tokens);
  kv_cache_->remove(seq);  // the blocks stay cached, free, until the request revives them
  result.num_known_chunks = end_tokens / chunk_tokens_;
  return result;
}

void EngineCore::finish_unadmitted(const PendingLoad& load, FinishReason reason) {
  const int64_t now = clock_->now_ns();
  for (int32_t i = 0; i < load.request.n; ++i) {
    TokenEvent e;
    e.choice_index = i;
    e.is_final = true;
    e.finish_reason = reason;
    e.usage.num_prompt_tokens = static_cast<int64_t>(load.request.prompt_tokens.size());
    if (metrics_ != nullptr) {
      metrics_->add_finished(reason);
      metrics_->observe_e2e_request_latency(seconds(now - load.arrival_ns));
    }
    load.stream->push(std::move(e));
  }
}

void EngineCore::store_new_chunks(const StepPlan& plan, const ExecutedStep& executed) {
  const int64_t blocks_per_chunk = chunk_tokens_ / options_.block_size;
  const std::vector<RequestId>& failed = executed.result.failed_ids;
  for (const ScheduledRequest& s : plan.requests) {
    if (std::find(failed.begin(), failed.end(), s.request_id) != failed.end()) continue;
    auto it = choices_.find(s.request_id);
    const Request* r = scheduler_->find(s.request_id);
    if (it == choices_.end() || r == nullptr) continue;
    Choice& c = it->second;
    // Chunks inside the admission's prefix hit came from the pool or a tier:
    // whoever computed them stored them.
    if (s.is_first_step) {
      c.num_stored_chunks =
          std::max<int64_t>(c.num_stored_chunks, s.num_computed_tokens / chunk_tokens_);
    }
    const int64_t num_written = s.num_computed_tokens + s.num_new_tokens;  // K/V now in storage
    const int64_t num_chunks = num_written / chunk_tokens_;
    if (num_chunks <= c.num_stored_chunks) continue;
    chain_hashes(r->tokens, c.cache_salt, num_chunks * blocks_per_chunk, &c.block_hashes);
    for (int64_t k = c.num_stored_chunks; k < num_chunks; ++k) {
      const ChunkKey key =
          make_chunk_key(fingerprint_, c.block_hashes[(k + 1) * blocks_per_chunk - 1]);
      if (tiers_->memory_contains(key)) continue;
      auto chunk = std::make_shared<KvChunk>();
      chunk->key = key;
      chunk->num_tokens = chunk_tokens_;
      chunk->payload =
          gather_chunk_payload(*kv_storage_, std::span<const int32_t>(s.block_table)
                                                 .subspan(static_cast<size_t>(k * blocks_per_chunk),
                                                          static_cast<size_t>(blocks_per_chunk)));
      tiers_->put_async(std::move(chunk));
    }
    c.num_stored_chunks = num_chunks;
  }
}

void EngineCore::publish_scheduler_state() {
  if (metrics_ == nullptr) return;
  const SchedulerStats s = scheduler_->stats();
  metrics_->set_scheduler_state(s.num_running, s.num_waiting, s.kv_usage, s.prefix_query_tokens,
                                s.prefix_hit_tokens, s.num_preemptions);
}

}  // namespace strata
