// TestServer: an HttpServer on a free loopback port with the routes the
// protocol tests use, some of which answer later from a foreign thread (as
// the engine thread does), and counters of what handlers saw.
//
// Routes:
//   GET  /hello             200 "hello" (on the I/O thread)
//   POST /echo              200 with the request body
//   POST /size              200 with the body's size in decimal
//   GET  /info              200 "METHOD PATH QUERY 1.x keep-alive|close"
//   GET  /later?ms=N        200 "later", sent from the background thread after N ms
//   GET  /sse?n=N&ms=M      SSE: N events "data: i", one every M ms, from the background thread
//   GET|POST /hang          never answers; counts disconnects
//   GET  /sse-hang          SSE: one event, then nothing; counts disconnects
//   GET  /flood?kib=K       SSE: K KiB frames from the background thread until write() fails
//   GET  /big?mib=N         200 with N MiB of 'x'
//   GET  /drop              drops the response unanswered (the server answers 500)
//   GET  /throw             throws
//   GET  /abandon           SSE: one event, then the handle is dropped
//   GET  /bad-header        answers with a header value holding CR LF
//   GET  /v1/models/{id}    200 with the decoded id
//   GET  /compute?ms=N      on a worker thread: blocks N ms, then 200 "computed"
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <vector>

#include "http/http_server.h"

namespace strata::http::testing {

// Runs closures on one thread at their due time.
class Background {
 public:
  using Clock = std::chrono::steady_clock;
  Background();
  ~Background();
  void post(std::function<void()> fn, std::chrono::milliseconds delay = {});

 private:
  struct Task {
    Clock::time_point due;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Task& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Task, std::vector<Task>, std::greater<Task>> tasks_;
  uint64_t seq_ = 0;
  bool is_stopping_ = false;
  std::thread thread_;
};

class TestServer {
 public:
  explicit TestServer(HttpServerOptions options = {});
  ~TestServer();

  uint16_t port() const { return server_->port(); }
  HttpServer& server() { return *server_; }
  HttpServerStats stats() const { return server_->stats(); }

  int num_disconnects() const { return num_disconnects_.load(); }
  int num_hanging() const { return num_hanging_.load(); }
  // Waits until num_disconnects() >= n (hang detection bound).
  bool wait_disconnects(int n, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  bool wait_hanging(int n, std::chrono::milliseconds timeout = std::chrono::seconds(5));
  // /flood: write() calls that succeeded, and whether one failed.
  int64_t flood_frames() const { return flood_frames_.load(); }
  bool is_flood_refused() const { return is_flood_refused_.load(); }
  // /compute handlers that found their client gone after blocking.
  int num_worker_saw_disconnect() const { return num_worker_saw_disconnect_.load(); }
  // Responses of /hang and /sse-hang, kept until the server stops.
  void release_hanging();

  // Default options for tests: port 0 and short lingering.
  static HttpServerOptions options();

 private:
  Router routes();
  void keep(ResponsePtr r);

  std::unique_ptr<Background> background_;
  std::unique_ptr<HttpServer> server_;
  std::atomic<int> num_disconnects_{0};
  std::atomic<int> num_hanging_{0};
  std::atomic<int64_t> flood_frames_{0};
  std::atomic<bool> is_flood_refused_{false};
  std::atomic<int> num_worker_saw_disconnect_{0};
  std::mutex mu_;
  std::vector<ResponsePtr> hanging_;
};

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

}  // namespace strata::http::testing
