// Internal to src/http: ResponseChannel, the mailbox between the handler
// side of one response (HttpResponse, any thread) and its Connection (one
// I/O thread).
//
// The handler side formats status line, headers and chunk framing on its
// own thread and appends the bytes under the channel's mutex; the first
// append after the connection last took posts one wake-up to the I/O
// thread, so a burst of frames costs one post and is written with one
// gather write. The connection takes the pending bytes, reports what it
// wrote (for the write-queue bound) and tells the channel when the client
// is gone or the response completed.
//
// Shared by the HttpResponse handle and the Connection (shared_ptr); it
// refers to the connection only weakly, and to the I/O thread through a
// Poster, so it may outlive both. Callbacks run and are destroyed outside
// the mutex. Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_request.h"

namespace strata::http::detail {

class Connection;
class Poster;
struct ServerCore;

// What the response answers: fixed when the request is dispatched.
struct ResponseContext {
  int version_minor = 1;
  bool is_head = false;
  bool keep_alive = true;  // the request allows it
};

class ResponseChannel {
 public:
  ResponseChannel(std::shared_ptr<const ServerCore> core, std::shared_ptr<Poster> poster,
                  std::weak_ptr<Connection> connection, ResponseContext context);

  // ---- handler side (any thread) ----
  bool send(int status, std::string_view content_type, std::string body, const HeaderList& headers);
  bool start_stream(int status, std::string_view content_type, const HeaderList& headers);
  bool write(std::string_view data);
  bool finish();
  void on_disconnect(std::function<void()> callback);
  bool is_disconnected() const { return is_disconnected_.load(std::memory_order_acquire); }
  size_t queued_bytes() const;
  // The last handle is gone (or its handler threw): an unanswered request
  // gets 500; an unfinished stream is written out as far as it got and its
  // connection closed without the terminating chunk.
  void release();

  // ---- connection side (the I/O thread) ----
  struct Batch {
    std::vector<std::string> buffers;
    bool is_complete = false;  // every byte of the response is in this or an earlier batch
    bool is_aborted = false;   // close the connection now (write queue overflow)
    bool keep_alive = false;   // what the response head promised
  };
  Batch take();
  void on_written(size_t num_bytes);
  // Every byte of the response has been queued (or it was aborted).
  bool is_finished() const;
  // The client went away (or the server stops) before completion: fires
  // the disconnect callbacks unless the response already completed.
  // Returns whether they fired.
  bool mark_disconnected();
  // The connection wrote the whole response: drops the callbacks.
  void mark_completed();

 private:
  enum class Phase { kNone, kStreaming, kFinished };
  // Appends under mu_ and posts a wake-up if none is pending.
  void enqueue_locked(std::string bytes);
  void post_wakeup_locked();
  std::string format_head(int status, std::string_view content_type, const HeaderList& headers,
                          bool is_chunked, bool has_length, size_t content_length);

  const std::shared_ptr<const ServerCore> core_;
  const std::shared_ptr<Poster> poster_;
  const std::weak_ptr<Connection> connection_;
  const ResponseContext context_;

  mutable std::mutex mu_;
  Phase phase_ = Phase::kNone;
  std::vector<std::string> pending_;
  size_t unsent_bytes_ = 0;  // pending + taken but not yet written
  bool is_wakeup_posted_ = false;
  bool is_aborted_ = false;
  bool keep_alive_ = false;
  bool is_completed_ = false;
  std::atomic<bool> is_disconnected_{false};
  std::vector<std::function<void()>> callbacks_;
};

}  // namespace strata::http::detail
