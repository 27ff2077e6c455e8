// Engine: the serving engine as callers see it. One engine thread owns an
// EngineCore (scheduler, KV cache manager, KV storage, model runner,
// samplers) and loops: drain the inbox, run one step, publish events.
// Callers only touch the thread-safe inbox (add_request, abort) and the
// per-request RequestStreams that add_request returns.
//
//   auto stream = engine->add_request(req);          // any thread
//   while (auto e = (*stream)->pop()) { ... }        // TokenEvents until done
//   engine->abort((*stream)->id());                  // frees blocks within a step
//
// A request waiting for KV chunks from a tier (EngineCore's `loading`
// state) does not hold the loop: others keep stepping, and the loader's
// wakeup restarts an idle loop when the load finishes.
//
// Messages are applied in the order they were sent, at the start of the next
// step, so an abort frees the request's KV blocks before that step is
// scheduled. One request's failure (bad sampling params, a failed forward)
// finishes that request with kError; the loop goes on. Destroying the engine
// stops the thread and finishes every open request with kAbort.
//
// Borrows the ModelWeights and Tokenizer (they must outlive it). All public
// methods are thread-safe.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>

#include "engine/engine_core.h"
#include "engine/engine_options.h"
#include "engine/generation_request.h"
#include "engine/metrics.h"
#include "engine/prefix_probe.h"
#include "engine/request_stream.h"
#include "model/model_weights.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace strata {

// Makes the engine's KvConnector (one that reports into the engine's own
// Metrics), instead of the one options.kv_tiers would create.
using KvConnectorFactory =
    std::function<Result<std::unique_ptr<KvConnector>>(Metrics& metrics, const Clock& clock)>;

class Engine {
 public:
  // Builds the core (allocating the KV pool) and starts the engine thread.
  // `connector_factory`, when set, makes the core's connector.
  static Result<std::unique_ptr<Engine>> create(const ModelWeights& weights,
                                                const Tokenizer& tokenizer,
                                                const EngineOptions& options,
                                                const KvConnectorFactory& connector_factory = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Checks the request (EngineCore::check_request) and queues it. The
  // stream's id names it for abort().
  Result<std::shared_ptr<RequestStream>> add_request(GenerationRequest request);
  // Queues an abort of every choice of stream `stream_id`; unknown or
  // finished ids are ignored.
  void abort(StreamId stream_id);
  // Queues EngineCore::migrate(stream_id, kv_peer): the stream then ends
  // with its ResumeState set, or (a request that cannot move) runs on.
  void migrate(StreamId stream_id, std::string kv_peer);

  // What this engine holds of a prompt whose full blocks have the chained
  // keys `block_hashes`, and its load (see PrefixProbe). Thread-safe; never
  // waits for the engine thread (it may wait on a tier's I/O timeout).
  PrefixProbe probe_prefix(std::span<const BlockHash> block_hashes) const;

  const Metrics& metrics() const { return metrics_; }
  int64_t max_model_len() const { return max_model_len_; }
  const EngineOptions& options() const { return options_; }
  int64_t num_kv_blocks() const { return num_kv_blocks_; }

 private:
  struct AddMessage {
    GenerationRequest request;
    std::shared_ptr<RequestStream> stream;
    int64_t arrival_ns;
  };
  struct AbortMessage {
    StreamId stream_id;
  };
  struct MigrateMessage {
    StreamId stream_id;
    std::string kv_peer;
  };
  using Message = std::variant<AddMessage, AbortMessage, MigrateMessage>;

  Engine() = default;
  void loop();

  Metrics metrics_;
  SteadyClock clock_;
  std::unique_ptr<EngineCore> core_;  // touched only by the engine thread after create()
  EngineOptions options_;
  int64_t max_model_len_ = 0;
  int64_t num_kv_blocks_ = 0;
  const PrefixIndex* prefix_index_ = nullptr;  // the pool's, readable from any thread
  KvConnector* connector_ = nullptr;           // the core's; probe() is thread-safe

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Message> inbox_;
  bool is_stopping_ = false;
  bool is_load_done_ = false;  // a tier load finished: the loop has work
  std::thread thread_;
};

}  // namespace strata
