// EngineCore: the single-threaded heart of the serving engine. It admits
// requests, aborts them, and runs the step loop; each concern it drives has
// its own owner:
//   Scheduler        which tokens of which requests run (sched/)
//   StepExecutor     the plan's forward pass and samplers
//   OutputProcessor  per-choice text, stop strings, events, latency metrics
//   KvConnector      KV outside the pool (the tiered cache), optional
//   KvCacheManager   the pool's block tables and prefix cache (kv/)
//
// One step(): admit finished connector loads -> schedule -> execute ->
// save KV to the connector -> scheduler update -> events.
//
// Speculative decoding (options.speculative): the drafter it names is the
// scheduler's; the SpeculationGate says, inside each schedule(), how many
// of each request's proposed drafts the step verifies, from the measured
// cost of steps of each size and each request's acceptance, and each
// step's accepted drafts and (for decode-only steps) its wall time are fed
// back to it.
//
// Pipeline micro-batches (rank 0 of a model-parallel group with P > 1
// stages: StepExecutor::can_pipeline()): step() keeps up to P plans in
// flight, each over requests the others do not hold and about 1/P of the
// live ones (Scheduler::schedule_micro_batch), so stage 0 (this rank) runs
// plan k+1 while the later stages run plan k; each step() launches until P
// are in flight, then finishes the oldest (samples it, updates the
// scheduler, streams its tokens), in launch order. Per-request samplers and
// batch invariance make the tokens the same as one plan at a time. Before a
// connector load is written (its workers answer over the same channel the
// logits come back on) or flushed, the plans in flight are finished first.
// With P = 1, no group, or --no-pipeline-micro-batches (ParallelOptions),
// step() is the one-plan step.
//
// Admission. A request with n > 1 becomes n scheduler requests ("choices")
// with seeds seed, seed+1, ...; choices 1.. name choice 0 as their prefix
// source, so they start once its prompt is computed and take its full blocks
// from the prefix cache. The stop-token set (the request's stop_token_ids
// plus the model's end-of-generation tokens unless ignore_eos) is decided
// here, once. With a connector, admit() first asks it how much of the prompt
// beyond the pool's own prefix hit it can supply; if anything, the request
// waits in the `loading` state (not yet in the scheduler) while others keep
// stepping, and a later step() writes what arrived into fresh blocks, enters
// them into the prefix cache and admits the request, whose lookup then hits
// them. Any failure means the rest of the prompt is computed: the output is
// the same either way.
//
// Ids: a request (what a caller submits; its RequestStream's id, the
// "stream id") has n choices, each a scheduler request with its own
// RequestId. abort() takes a stream id.
//
// Borrows the ModelWeights and Tokenizer (they must outlive it) and the
// Metrics and Clock when given. Not thread-safe: Engine runs it on its
// thread; tests and benchmarks may drive it directly. Only check_request()
// and make_stream() may be called from other threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/engine_options.h"
#include "engine/generation_request.h"
#include "engine/kv_connector.h"
#include "engine/metrics.h"
#include "engine/output_processor.h"
#include "engine/request_limits.h"
#include "engine/request_stream.h"
#include "engine/step_executor.h"
#include "kv/kv_cache_manager.h"
#include "model/model_weights.h"
#include "runtime/kv_storage.h"
#include "runtime/model_runner.h"
#include "sched/clock.h"
#include "sched/scheduler.h"
#include "spec/drafter.h"
#include "spec/speculation_gate.h"
#include "tokenizer/tokenizer.h"
#include "util/thread_pool.h"

namespace strata {

// What one step() computed, for benchmarks.
struct StepStats {
  int64_t num_scheduled_tokens = 0;
  int64_t num_prefill_tokens = 0;  // tokens of requests still in their prompt
  int32_t num_requests = 0;
  int32_t num_sampled = 0;
  // Speculative decoding: draft tokens verified, and accepted.
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_drafts = 0;
  // KV slots held by the scheduled requests' block tables, and how many of
  // them hold a token after this step: 1 - used/allocated is the waste.
  int64_t num_allocated_slots = 0;
  int64_t num_used_slots = 0;
  double seconds = 0.0;  // wall time of the whole step

  static StepStats of(const StepPlan& plan);
};

class EngineCore {
 public:
  // Sizes the KV pool from options.resolved_kv_cache_memory_bytes(). `metrics` and
  // `clock` may be null (no metrics; the steady clock). `connector`, when
  // given, replaces the one options.kv_tiers would create (tests inject
  // fakes and faulty tiers).
  static Result<std::unique_ptr<EngineCore>> create(
      const ModelWeights& weights, const Tokenizer& tokenizer, const EngineOptions& options,
      Metrics* metrics = nullptr, const Clock* clock = nullptr,
      std::unique_ptr<KvConnector> connector = nullptr);
  ~EngineCore();

  // RequestLimits::check with this engine's limits. Thread-safe.
  Status check_request(const GenerationRequest& request) const;
  // A new stream with a fresh id. Thread-safe.
  std::shared_ptr<RequestStream> make_stream(int32_t num_choices);

  // Hands a checked request to the scheduler (or to the connector's
  // loading state); its events go to `stream`. arrival_ns < 0: now.
  void admit(GenerationRequest request, std::shared_ptr<RequestStream> stream,
             int64_t arrival_ns = -1);
  // check_request + make_stream + admit.
  Result<std::shared_ptr<RequestStream>> add_request(GenerationRequest request);

  // Finishes every live choice of stream `stream_id` with kAbort, freeing
  // its KV blocks now. Unknown ids are ignored.
  void abort(StreamId stream_id);
  // Aborts everything (shutdown).
  void abort_all();

  // Migration (engine/resume_state.h): ends the running request of stream
  // `stream_id` at this step boundary and hands its ResumeState (kv_peer set
  // to `kv_peer`) to the stream (RequestStream::resume_state) before its
  // final kAbort event; its blocks go back into the prefix cache as any
  // finished request's, so a peer can pull their KV by content. False (and
  // nothing changes) for a request that cannot move: unknown, n > 1, or
  // still loading KV; it then runs on.
  bool migrate(StreamId stream_id, const std::string& kv_peer);

  // Runs one step (first admitting requests whose loads finished); does
  // nothing when no request can run.
  StepStats step();
  bool has_unfinished_requests() const {
    return outputs_->has_choices() || !loads_.empty() || !in_flight_.empty();
  }
  // Every unfinished request waits for a connector load: step() has nothing
  // to do until the load wakeup fires.
  bool is_only_loading() const {
    return !outputs_->has_choices() && !loads_.empty() && in_flight_.empty();
  }
  // Pipeline micro-batches: how many plans step() keeps in flight (1: one
  // at a time), and how many plans it launched while another was in flight.
  int32_t pipeline_depth() const { return pipeline_depth_; }
  int64_t num_overlapped_launches() const { return num_overlapped_launches_; }
  int32_t num_loading() const { return static_cast<int32_t>(loads_.size()); }
  // Called from the connector's thread when a load finishes (the Engine
  // wakes its loop). Set it before the first admit().
  void set_load_wakeup(std::function<void()> wakeup) { load_wakeup_ = std::move(wakeup); }
  // Waits until everything saved to the connector arrived (tests; shutdown
  // does it too). No-op without a connector.
  void flush_kv_connector();
  KvConnector* kv_connector() { return connector_.get(); }

  const Scheduler& scheduler() const { return *scheduler_; }
  const KvCacheManager& kv_cache() const { return *kv_cache_; }
  const StepExecutor& executor() const { return *executor_; }
  // Null unless speculative decoding is on.
  const SpeculationGate* speculation_gate() const { return gate_.get(); }
  int64_t max_model_len() const { return max_model_len_; }
  const EngineOptions& options() const { return options_; }
  const Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  // A request in the `loading` state, keyed by its stream id (the load id).
  struct PendingLoad {
    GenerationRequest request;
    std::shared_ptr<RequestStream> stream;
    int64_t arrival_ns = 0;
    std::vector<BlockHash> block_hashes;  // of the prompt
  };

  EngineCore(const Tokenizer& tokenizer, const EngineOptions& options, Metrics* metrics,
             const Clock* clock);

  // admit() past the connector; `num_connector_tokens` of the prompt were
  // just loaded by it.
  void admit_now(GenerationRequest request, std::shared_ptr<RequestStream> stream,
                 int64_t arrival_ns, int64_t num_connector_tokens);
  // A resumed request's scheduler prompt: prompt + the outputs so far.
  static void extend_resumed_prompt(GenerationRequest& request);
  // Starts a connector load for `request` when one could pay off.
  bool try_start_load(GenerationRequest& request, const std::shared_ptr<RequestStream>& stream,
                      int64_t arrival_ns);
  // Admits the requests whose loads finished, after inserting their KV.
  void finish_loads();
  // With nothing left to run: a plan that only drops finished requests'
  // executor state (so an idle engine holds none).
  void release_finished();
  // Hands the step's computed KV to the connector.
  void save_kv(const StepPlan& plan, const ExecutedStep& executed);
  // Everything after a plan's execution: save KV, update the scheduler,
  // stream the outputs, stats and metrics; the step's seconds count from
  // `t0` (when it was scheduled; with micro-batches, when this step() began,
  // so steps' seconds add up to wall time, not to overlapping latencies).
  StepStats finish_step(const StepPlan& plan, const ExecutedStep& executed, int64_t t0);
  // step() with micro-batches in flight (see the header comment).
  StepStats step_pipelined();
  // Finishes the oldest plan in flight; every plan in flight.
  StepStats finish_oldest(int64_t t0);
  void drain_pipeline();
  void publish_state();

  const Tokenizer& tokenizer_;
  EngineOptions options_;
  Metrics* metrics_;
  SteadyClock steady_clock_;
  const Clock* clock_;
  int64_t max_model_len_ = 0;
  int32_t vocab_size_ = 0;
  RequestLimits limits_;
  std::vector<int32_t> eog_ids_;  // the model's end-of-generation tokens

  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<KvStorage> kv_storage_;
  std::unique_ptr<ModelRunner> runner_;
  std::unique_ptr<KvCacheManager> kv_cache_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<StepExecutor> executor_;
  std::unique_ptr<OutputProcessor> outputs_;
  std::unique_ptr<Drafter> drafter_;        // null: no speculative decoding
  std::unique_ptr<SpeculationGate> gate_;   // with drafter_
  std::unique_ptr<KvConnector> connector_;  // null: no KV outside the pool
  std::function<void()> load_wakeup_;
  std::unordered_map<StreamId, PendingLoad> loads_;
  int32_t pipeline_depth_ = 1;
  std::deque<StepPlan> in_flight_;  // launched, oldest first
  int64_t num_overlapped_launches_ = 0;

  std::atomic<StreamId> next_stream_id_{1};
  RequestId next_request_id_ = 1;
};

}  // namespace strata
