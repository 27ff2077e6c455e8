#include "engine/engine.h"

#include <chrono>
#include <utility>

namespace strata {

Result<std::unique_ptr<Engine>> Engine::create(const ModelWeights& weights,
                                               const Tokenizer& tokenizer,
                                               const EngineOptions& options,
                                               const KvConnectorFactory& connector_factory) {
  std::unique_ptr<Engine> engine(new Engine());
  std::unique_ptr<KvConnector> connector;
  if (connector_factory) {
    STRATA_ASSIGN_OR_RETURN(connector, connector_factory(engine->metrics_, engine->clock_));
  }
  STRATA_ASSIGN_OR_RETURN(engine->core_,
                          EngineCore::create(weights, tokenizer, options, &engine->metrics_,
                                             &engine->clock_, std::move(connector)));
  engine->max_model_len_ = engine->core_->max_model_len();
  engine->options_ = options;
  engine->num_kv_blocks_ = engine->core_->kv_cache().num_blocks();
  engine->prefix_index_ = &engine->core_->kv_cache().pool().index();
  engine->connector_ = engine->core_->kv_connector();
  engine->core_->set_load_wakeup([e = engine.get()] {
    {
      std::lock_guard<std::mutex> lock(e->mu_);
      e->is_load_done_ = true;
    }
    e->cv_.notify_all();
  });
  engine->thread_ = std::thread([e = engine.get()] { e->loop(); });
  return engine;
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    is_stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The core first: its connector's I/O thread calls the load wakeup (cv_),
  // so it must be joined before cv_ and mu_ go (members die after this body).
  core_.reset();
}

Result<std::shared_ptr<RequestStream>> Engine::add_request(GenerationRequest request) {
  STRATA_RETURN_IF_ERROR(core_->check_request(request));
  std::shared_ptr<RequestStream> stream = core_->make_stream(request.n);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_stopping_) return Status(StatusCode::kResourceExhausted, "engine: shutting down");
    inbox_.push_back(AddMessage{std::move(request), stream, clock_.now_ns()});
  }
  cv_.notify_all();
  return stream;
}

PrefixProbe Engine::probe_prefix(std::span<const BlockHash> block_hashes) const {
  PrefixProbe p;
  p.block_size = options_.block_size;
  p.num_pool_tokens = prefix_index_->count_leading(block_hashes) * options_.block_size;
  if (connector_ != nullptr) p.tiers = connector_->probe(block_hashes);
  const MetricsSnapshot m = metrics_.load();
  p.num_running = m.num_requests_running;
  p.num_waiting = m.num_requests_waiting;
  p.num_loading = m.num_requests_loading;
  p.num_pending_prefill_tokens = m.num_pending_prefill_tokens;
  p.num_free_kv_blocks = m.num_free_kv_blocks;
  p.num_kv_blocks = num_kv_blocks_;
  p.prefill_tokens_per_s = m.prefill_tokens_per_s;
  p.decode_tokens_per_s = m.decode_tokens_per_s;
  return p;
}

void Engine::abort(StreamId stream_id) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(AbortMessage{stream_id});
  }
  cv_.notify_all();
}

void Engine::migrate(StreamId stream_id, std::string kv_peer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    inbox_.push_back(MigrateMessage{stream_id, std::move(kv_peer)});
  }
  cv_.notify_all();
}

void Engine::loop() {
  std::deque<Message> messages;
  bool was_idle_step = false;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto has_news = [&] { return is_stopping_ || !inbox_.empty() || is_load_done_; };
      if (!core_->has_unfinished_requests() || core_->is_only_loading()) {
        cv_.wait(lock, has_news);
      } else if (was_idle_step) {
        // Work exists but nothing could be scheduled: do not spin.
        cv_.wait_for(lock, std::chrono::milliseconds(1), has_news);
      }
      messages.swap(inbox_);
      is_load_done_ = false;
      if (is_stopping_) break;
    }
    for (Message& m : messages) {
      if (auto* add = std::get_if<AddMessage>(&m)) {
        core_->admit(std::move(add->request), std::move(add->stream), add->arrival_ns);
      } else if (auto* abort = std::get_if<AbortMessage>(&m)) {
        core_->abort(abort->stream_id);
      } else {
        const MigrateMessage& mm = std::get<MigrateMessage>(m);
        core_->migrate(mm.stream_id, mm.kv_peer);
      }
    }
    messages.clear();
    was_idle_step = core_->has_unfinished_requests() && core_->step().num_requests == 0;
  }
  // Requests still queued were never admitted: close their streams too.
  for (Message& m : messages) {
    if (auto* add = std::get_if<AddMessage>(&m)) {
      core_->admit(std::move(add->request), std::move(add->stream), add->arrival_ns);
    }
  }
  core_->abort_all();
}

}  // namespace strata
