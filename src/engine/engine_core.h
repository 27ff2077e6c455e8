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
// Borrows the ModelWeights and Tokenizer (they must outlive it) and the
// Metrics and Clock when given. Not thread-safe: Engine runs it on its
// thread; tests and benchmarks may drive it directly. Only check_request()
// and make_stream() may be called from other threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/engine_options.h"
#include "engine/generation_request.h"
#include "engine/metrics.h"
#include "engine/request_stream.h"
#include "engine/step_executor.h"
#include "engine/stop_string_matcher.h"
#include "kv/kv_cache_manager.h"
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
  // `clock` may be null (no metrics; the steady clock).
  static Result<std::unique_ptr<EngineCore>> create(const ModelWeights& weights,
                                                    const Tokenizer& tokenizer,
                                                    const EngineOptions& options,
                                                    Metrics* metrics = nullptr,
                                                    const Clock* clock = nullptr);
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

  // Runs one step; does nothing when no request can run.
  StepStats step();
  bool has_unfinished_requests() const { return !choices_.empty(); }

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
  };

  EngineCore(const ModelWeights& weights, const Tokenizer& tokenizer, const EngineOptions& options,
             Metrics* metrics, const Clock* clock);

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

  std::atomic<uint64_t> next_stream_id_{1};
  RequestId next_request_id_ = 1;
  std::unordered_map<RequestId, Choice> choices_;
  std::unordered_map<uint64_t, std::vector<RequestId>> stream_choices_;  // live choices
};

}  // namespace strata
