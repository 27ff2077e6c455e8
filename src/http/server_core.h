// Internal to src/http: the state an HttpServer shares with its
// connections and their response channels, and the Poster that hands work
// to one I/O thread.
//
// ServerCore is immutable after start() except for its atomics; it is held
// by shared_ptr so a response handle that outlives the server can still
// format its 500 (the options) without touching freed memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>

#include "http/http_server.h"

namespace boost::asio {
class io_context;
class thread_pool;
}  // namespace boost::asio

namespace strata::http::detail {

// Posts closures to one io_context until detach(); afterwards post() drops
// them. Thread-safe. The server detaches every Poster after joining its
// threads and before destroying the io_contexts, so a handle held past the
// server never reaches a dead io_context.
class Poster {
 public:
  explicit Poster(boost::asio::io_context* ioc) : ioc_(ioc) {}
  bool post(std::function<void()> fn);
  void detach();

 private:
  std::mutex mu_;
  boost::asio::io_context* ioc_;
};

struct ServerCounters {
  std::atomic<int64_t> num_open_connections{0};
  std::atomic<int64_t> num_accepted{0};
  std::atomic<int64_t> num_refused{0};
  std::atomic<int64_t> num_requests{0};
  std::atomic<int64_t> num_active_requests{0};
  std::atomic<int64_t> num_transport_errors{0};
  std::atomic<int64_t> num_timeouts{0};
  std::atomic<int64_t> num_disconnects{0};
  std::atomic<int64_t> bytes_read{0};
  std::atomic<int64_t> bytes_written{0};
};

struct ServerCore {
  ServerCore(HttpServerOptions o, Router r) : options(std::move(o)), router(std::move(r)) {}

  const HttpServerOptions options;
  const Router router;
  std::atomic<bool> is_draining{false};
  ServerCounters counters;
  // Runs RunOn::kWorker handlers; set once before the I/O threads start.
  boost::asio::thread_pool* worker_pool = nullptr;

  // The transport's own response for `error` (options.error_formatter or
  // the plain-text default).
  HttpReply error_reply(const HttpError& error) const;
};

// "Not Found" for 404; "Unknown" for codes without a reason phrase.
std::string_view reason_phrase(int status);

}  // namespace strata::http::detail
