// EngineCore: the single-threaded heart of the serving engine. It owns the
// Scheduler, the KvCacheManager, the KV storage, the ModelRunner (with its
// thread pool) and the StepExecutor, and turns the scheduler's per-request
// updates into TokenEvents on each request's RequestStream: incremental
// UTF-8-safe text, stop strings (held back, matched across tokens, never
// emitted), logprobs, finish reasons and usage. It records Metrics.
//
// One step(): schedule -> forward + sample -> scheduler update -> events.
// A request with n > 1 becomes n scheduler requests ("choices") with seeds
// seed, seed+1, ...; choices 1.. name choice 0 as their prefix source, so
// they start once its prompt is computed and take its full blocks from the
// prefix cache.
//
// Tiered KV cache (when EngineOptions::kv_tiers configures a tier, or a
// KvTierManager is passed to create()):
// - Write path: after each forward, every chunk (kv_tiers.chunk_tokens
//   tokens, whole blocks) a choice completed is copied out of KvStorage and
//   handed to KvTierManager::put_async, which never blocks the step. Chunks
//   the choice got from the pool's prefix cache or from a tier are skipped.
// - Read path: admit() looks the prompt up in the pool; when at least one
//   whole chunk beyond the pool's hit could come from a tier, the request
//   enters the `loading` state (not yet in the scheduler) and a KvLoader
//   thread fetches the chunk run while other requests keep stepping. The
//   next step() copies the loaded chunks into fresh blocks, commits them to
//   the prefix cache and admits the request, whose lookup then hits them.
//   Any failure (miss, corrupt chunk, timeout, pool too full) just means the
//   rest of the prompt is computed: the output is the same either way.
//
// Borrows the ModelWeights and Tokenizer (they must outlive it) and the
// Metrics and Clock when given. Not thread-safe: Engine runs it on its
// thread; tests and benchmarks may drive it directly. Only check_request()
// and make_stream() may be called from other threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/engine_options.h"
#include "engine/generation_request.h"
#include "engine/kv_loader.h"
#include "engine/metrics.h"
#include "engine/request_stream.h"
#include "engine/step_executor.h"
#include "engine/stop_string_matcher.h"
#include "kv/kv_cache_manager.h"
#include "kvtier/chunk_key.h"
#include "kvtier/kv_tier_manager.h"
#include "model/model_weights.h"
#include "model/tokenizer/incremental_detokenizer.h"
#include "model/tokenizer/tokenizer.h"
#include "runtime/kv_storage.h"
#include "runtime/model_runner.h"
#include "sched/clock.h"
#include "sched/scheduler.h"
#include "util/thread_pool.h"

namespace strata {

// What one step() computed, for benchmarks.
struct StepStats {
  int64_t num_scheduled_tokens = 0;
  int64_t num_prefill_tokens = 0;  // tokens of requests still in their prompt
  int32_t num_requests = 0;
  int32_t num_sampled = 0;
  // KV slots held by the scheduled requests' block tables, and how many of
  // them hold a token after this step: 1 - used/allocated is the waste.
  int64_t num_allocated_slots = 0;
  int64_t num_used_slots = 0;
  double seconds = 0.0;  // wall time of the whole step
};

class EngineCore {
 public:
  // Sizes the KV pool from options.kv_cache_memory_bytes. `metrics` and
  // `clock` may be null (no metrics; the steady clock). `tiers`, when given,
  // replaces the tiers options.kv_tiers would create (tests inject faulty
  // ones); options.kv_tiers.chunk_tokens is the chunk size either way.
  static Result<std::unique_ptr<EngineCore>> create(const ModelWeights& weights,
                                                    const Tokenizer& tokenizer,
                                                    const EngineOptions& options,
                                                    Metrics* metrics = nullptr,
                                                    const Clock* clock = nullptr,
                                                    std::unique_ptr<KvTierManager> tiers = nullptr);
  ~EngineCore();

  // Checks what can be checked without engine state: a non-empty prompt of
  // valid ids, n in [1, 256], 1 <= max_tokens, 0 <= min_tokens <= max_tokens.
  // Thread-safe.
  Status check_request(const GenerationRequest& request) const;
  // A new stream with a fresh id. Thread-safe.
  std::shared_ptr<RequestStream> make_stream(int32_t num_choices);

  // Hands a checked request to the scheduler; its events go to `stream`.
  // Admission failures (too long for --max-model-len, never fits the pool,
  // ...) become final error events. arrival_ns < 0: now.
  void admit(GenerationRequest request, std::shared_ptr<RequestStream> stream,
             int64_t arrival_ns = -1);
  // check_request + make_stream + admit.
  Result<std::shared_ptr<RequestStream>> add_request(GenerationRequest request);

  // Finishes every live choice of stream `stream_id` with kAbort, freeing
  // its KV blocks now. Unknown ids are ignored.
  void abort(uint64_t stream_id);
  // Aborts everything (shutdown).
  void abort_all();

  // Runs one step (first admitting requests whose tier load finished);
  // does nothing when no request can run.
  StepStats step();
  bool has_unfinished_requests() const { return !choices_.empty() || !loads_.empty(); }
  // Every unfinished request waits for a tier load: step() has nothing to do
  // until the load wakeup fires.
  bool is_only_loading() const { return choices_.empty() && !loads_.empty(); }
  int32_t num_loading() const { return static_cast<int32_t>(loads_.size()); }
  // Called from the loader thread when a tier load finishes (the Engine
  // wakes its loop). Set it before the first admit().
  void set_load_wakeup(std::function<void()> wakeup) { load_wakeup_ = std::move(wakeup); }
  // Waits until every queued chunk store reached its tiers or was dropped
  // (tests; shutdown does it too). No-op without tiers.
  void flush_kv_tiers();
  // The tiers, or nullptr when off.
  KvTierManager* kv_tiers() { return tiers_.get(); }
  int32_t kv_chunk_tokens() const { return chunk_tokens_; }

  const Scheduler& scheduler() const { return *scheduler_; }
  const KvCacheManager& kv_cache() const { return *kv_cache_; }
  int64_t max_model_len() const { return max_model_len_; }
  const EngineOptions& options() const { return options_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  // One scheduler request: a choice of a stream.
  struct Choice {
    Choice(const Tokenizer& tokenizer, std::vector<std::string> stop_strings)
        : detokenizer(tokenizer), matcher(std::move(stop_strings)) {}

    std::shared_ptr<RequestStream> stream;
    uint64_t stream_id = 0;
    int32_t index = 0;
    int32_t min_tokens = 0;
    bool wants_logprobs = false;
    IncrementalDetokenizer detokenizer;
    StopStringMatcher matcher;
    int64_t arrival_ns = 0;
    int64_t first_scheduled_ns = -1;
    int64_t first_token_ns = -1;
    int64_t last_token_ns = -1;
    TokenUsage usage;
    // Tiered KV cache.
    std::string cache_salt;
    std::vector<BlockHash> block_hashes;  // chained keys of the choice's full blocks (memo)
    int64_t num_stored_chunks = 0;        // chunks [0, n) stored, loaded or found in the pool
    int64_t num_tier_loaded_tokens = 0;   // prompt tokens loaded from tiers at admission
  };

  // A request in the `loading` state: admitted by the caller, not yet by the
  // scheduler. Keyed by its stream id.
  struct PendingLoad {
    GenerationRequest request;
    std::shared_ptr<RequestStream> stream;
    int64_t arrival_ns = 0;
    int64_t load_start_ns = 0;
    int64_t first_chunk = 0;     // chunk index of keys[0]
    std::vector<ChunkKey> keys;  // chunks first_chunk, first_chunk + 1, ...
  };
  // What a finished load contributed to a request's admission.
  struct LoadResult {
    int64_t num_known_chunks = 0;  // chunks [0, n) are in the pool or a tier: do not store
    int64_t num_loaded_tokens = 0;
  };

  EngineCore(const ModelWeights& weights, const Tokenizer& tokenizer, const EngineOptions& options,
             Metrics* metrics, const Clock* clock);

  // admit() without the tier lookup.
  void admit_now(GenerationRequest request, std::shared_ptr<RequestStream> stream,
                 int64_t arrival_ns, const LoadResult& load);
  // Starts a tier load for `request` when one could pay off; false: admit now.
  bool try_start_load(GenerationRequest& request, const std::shared_ptr<RequestStream>& stream,
                      int64_t arrival_ns);
  // Admits the requests whose loads finished, after inserting their chunks.
  void finish_loads();
  // Copies a finished load's chunks into the pool's prefix cache.
  LoadResult insert_loaded(const PendingLoad& load, const KvTierManager::Loaded& loaded);
  // Final events for every choice of a request that never reached the scheduler.
  void finish_unadmitted(const PendingLoad& load, FinishReason reason);
  // The write path: stores chunks the plan's forward completed.
  void store_new_chunks(const StepPlan& plan, const ExecutedStep& executed);
  // Extends `hashes` (chained block keys of `tokens`) to `num_blocks` blocks.
  void chain_hashes(std::span<const int32_t> tokens, std::string_view cache_salt,
                    int64_t num_blocks, std::vector<BlockHash>* hashes) const;
  void publish_loading_state();

  // Turns one scheduler update into an event; returns true if the choice
  // hit a stop string while the scheduler still runs it.
  bool handle_update(const RequestUpdate& u, const ExecutedStep& executed, int64_t now_ns);
  // Sends the final event and forgets the choice.
  void finish_choice(RequestId id, TokenEvent event, FinishReason reason, int64_t now_ns);
  void publish_scheduler_state();
  double seconds(int64_t ns) const { return static_cast<double>(ns) * 1e-9; }

  const ModelWeights& weights_;
  const Tokenizer& tokenizer_;
  EngineOptions options_;
  Metrics* metrics_;
  SteadyClock steady_clock_;
  const Clock* clock_;
  int64_t max_model_len_ = 0;
  int32_t vocab_size_ = 0;
  std::vector<int32_t> eog_ids_;  // the model's end-of-generation tokens

  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<KvStorage> kv_storage_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<KvCacheManager> kv_cache_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<StepExecutor> executor_;

  // Tiered KV cache (all null / zero when off). The loader borrows the tiers,
  // so it is destroyed first (see ~EngineCore).
  std::unique_ptr<KvTierManager> tiers_;
  std::unique_ptr<KvLoader> loader_;
  ModelFingerprint fingerprint_;
  int32_t chunk_tokens_ = 0;
  size_t chunk_payload_bytes_ = 0;
  std::function<void()> load_wakeup_;
  std::unordered_map<uint64_t, PendingLoad> loads_;
  // Sequence ids of the temporary KvCacheManager sequences that insert loaded
  // chunks; far above any RequestId.
  uint64_t next_load_seq_id_ = uint64_t{1} << 62;

  std::atomic<uint64_t> next_stream_id_{1};
  RequestId next_request_id_ = 1;
  std::unordered_map<RequestId, Choice> choices_;
  std::unordered_map<uint64_t, std::vector<RequestId>> stream_choices_;  // live choices
};

}  // namespace strata
