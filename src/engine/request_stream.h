// RequestStream: the per-request queue of TokenEvents that the engine thread
// writes and one consumer (an HTTP handler, a benchmark) reads.
//
// A stream covers all n choices of a request; it is done once every choice
// has delivered its final event. Thread-safe: the engine pushes, any thread
// pops. Shared (std::shared_ptr) by the engine and the consumer, so either
// may go away first.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/resume_state.h"
#include "engine/token_event.h"

namespace strata {

// A caller-level request's id: the id of its RequestStream, which covers all
// n choices. (Each choice is a scheduler request with its own RequestId.)
using StreamId = uint64_t;

class RequestStream {
 public:
  RequestStream(StreamId id, int32_t num_choices) : id_(id), num_open_choices_(num_choices) {}

  // The stream id, for Engine::abort.
  StreamId id() const { return id_; }

  // Engine side. A final event closes its choice.
  void push(TokenEvent event);

  // Blocks until an event is available; nullopt once every choice is closed
  // and all events were read.
  std::optional<TokenEvent> pop();
  // As pop(), but gives up after `timeout` (nullopt; check is_done()).
  std::optional<TokenEvent> pop_for(std::chrono::milliseconds timeout);
  // Never blocks.
  std::optional<TokenEvent> try_pop();
  // Everything queued now.
  std::vector<TokenEvent> drain();

  // Every choice closed and every event read.
  bool is_done() const;
  // Every choice closed (events may remain).
  bool is_closed() const;

  // Event-driven consumers (the HTTP server) instead of a blocking pop():
  // `listener` runs after every push(), on the engine's thread and outside
  // the stream's lock, so it must be cheap and must not block (it schedules
  // the consumer, which then drains with try_pop()). Runs once at once when
  // events are already queued or the stream is closed. Set at most once.
  void set_listener(std::function<void()> listener);

  // Migration (EngineCore::migrate): set on the engine thread before the
  // final (kAbort) event; a consumer that finds it after that event hands
  // the request on instead of finishing it. Null otherwise.
  void set_resume_state(std::shared_ptr<const ResumeState> state);
  std::shared_ptr<const ResumeState> resume_state() const;
  // A resumed request (GenerationRequest::resume): the text the earlier
  // engine emitted for its outputs, as the replay here produced it (set at
  // admission, before any event). Empty otherwise.
  void set_resumed_text(std::string text);
  std::string resumed_text() const;

 private:
  std::optional<TokenEvent> take_locked();

  const StreamId id_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  int32_t num_open_choices_;
  std::shared_ptr<const std::function<void()>> listener_;
  std::shared_ptr<const ResumeState> resume_state_;
  std::string resumed_text_;
};

}  // namespace strata
