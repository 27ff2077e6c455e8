#include "http/test_server.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace strata::http::testing {
namespace {

int64_t query_int(const HttpRequest& r, std::string_view key, int64_t fallback) {
  std::string_view q = r.query;
  while (!q.empty()) {
    const size_t amp = q.find('&');
    const std::string_view kv = q.substr(0, amp);
    const size_t eq = kv.find('=');
    if (eq != std::string_view::npos && kv.substr(0, eq) == key) {
      return std::atoll(std::string(kv.substr(eq + 1)).c_str());
    }
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return fallback;
}

}  // namespace

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

Background::Background() : thread_([this] { loop(); }) {}

Background::~Background() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    is_stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Tasks not run are destroyed here, on this thread.
}

void Background::post(std::function<void()> fn, std::chrono::milliseconds delay) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_stopping_) return;
    tasks_.push(Task{Clock::now() + delay, seq_++, std::move(fn)});
  }
  cv_.notify_all();
}

void Background::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!is_stopping_) {
    if (tasks_.empty()) {
      cv_.wait(lock);
      continue;
    }
    // A copy: wait_until reads its deadline again after it wakes, and by then a post() may
    // have moved the queue's storage.
    const Clock::time_point due = tasks_.top().due;
    if (due > Clock::now()) {
      cv_.wait_until(lock, due);
      continue;
    }
    std::function<void()> fn = std::move(const_cast<Task&>(tasks_.top()).fn);
    tasks_.pop();
    lock.unlock();
    fn();
    fn = nullptr;  // whatever it holds dies outside the lock
    lock.lock();
  }
}

HttpServerOptions TestServer::options() {
  HttpServerOptions o;
  o.port = 0;
  o.linger_timeout = std::chrono::milliseconds(500);
  return o;
}

TestServer::TestServer(HttpServerOptions options)
    : background_(std::make_unique<Background>()),
      server_(std::make_unique<HttpServer>(std::move(options), routes())) {
  Status s = server_->bind();
  if (s.is_ok()) s = server_->start();
  if (!s.is_ok()) throw std::runtime_error(s.message());
}

TestServer::~TestServer() {
  server_->stop();
  background_.reset();  // joins; pending tasks (and responses they hold) die
  release_hanging();
  server_.reset();
}

void TestServer::keep(ResponsePtr r) {
  std::lock_guard<std::mutex> lock(mu_);
  hanging_.push_back(std::move(r));
}

void TestServer::release_hanging() {
  std::vector<ResponsePtr> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    held.swap(hanging_);
  }
}

bool TestServer::wait_disconnects(int n, std::chrono::milliseconds timeout) {
  return wait_until([&] { return num_disconnects_.load() >= n; }, timeout);
}

bool TestServer::wait_hanging(int n, std::chrono::milliseconds timeout) {
  return wait_until([&] { return num_hanging_.load() >= n; }, timeout);
}

Router TestServer::routes() {
  Router r;
  r.add("GET", "/hello",
        [](HttpRequest, ResponsePtr res) { res->send(200, "text/plain", "hello"); });
  r.add("POST", "/echo", [](HttpRequest req, ResponsePtr res) {
    res->send(200, "application/octet-stream", std::move(req.body));
  });
  r.add("POST", "/size", [](HttpRequest req, ResponsePtr res) {
    res->send(200, "text/plain", std::to_string(req.body.size()));
  });
  r.add("GET", "/info", [](HttpRequest req, ResponsePtr res) {
    res->send(200, "text/plain",
              req.method + " " + req.path + " " + req.query + " 1." +
                  std::to_string(req.version_minor) + (req.keep_alive ? " keep-alive" : " close"));
  });
  r.add("GET", "/later", [this](HttpRequest req, ResponsePtr res) {
    background_->post([res] { res->send(200, "text/plain", "later"); },
                      std::chrono::milliseconds(query_int(req, "ms", 0)));
  });
  r.add("GET", "/sse", [this](HttpRequest req, ResponsePtr res) {
    const int64_t n = query_int(req, "n", 3);
    const auto every = std::chrono::milliseconds(query_int(req, "ms", 0));
    res->start_sse();
    for (int64_t i = 0; i < n; ++i) {
      background_->post([res, i] { res->write(sse_event(std::to_string(i))); }, every * (i + 1));
    }
    background_->post([res] { res->finish(); }, every * (n + 1));
  });
  auto hang = [this](HttpRequest, ResponsePtr res) {
    res->on_disconnect([this] { num_disconnects_.fetch_add(1); });
    keep(res);
    num_hanging_.fetch_add(1);
  };
  r.add("GET", "/hang", hang);
  r.add("POST", "/hang", hang);
  r.add("GET", "/sse-hang", [this](HttpRequest, ResponsePtr res) {
    res->on_disconnect([this] { num_disconnects_.fetch_add(1); });
    res->start_sse();
    res->write(sse_event("first"));
    keep(res);
    num_hanging_.fetch_add(1);
  });
  r.add("GET", "/flood", [this](HttpRequest req, ResponsePtr res) {
    res->on_disconnect([this] { num_disconnects_.fetch_add(1); });
    res->start_sse();
    const std::string frame = sse_event(std::string(query_int(req, "kib", 64) << 10, 'f'));
    // Writes from the background thread until the server refuses.
    std::shared_ptr<std::function<void()>> step = std::make_shared<std::function<void()>>();
    std::weak_ptr<std::function<void()>> weak_step = step;
    *step = [this, res, frame, weak_step] {
      if (!res->write(frame)) {
        is_flood_refused_.store(true);
        return;
      }
      flood_frames_.fetch_add(1);
      if (auto s = weak_step.lock())
        background_->post([s] { (*s)(); }, std::chrono::milliseconds(1));
    };
    background_->post([step] { (*step)(); });
  });
  r.add("GET", "/big", [](HttpRequest req, ResponsePtr res) {
    res->send(200, "application/octet-stream",
              std::string(static_cast<size_t>(query_int(req, "mib", 1)) << 20, 'x'));
  });
  r.add("GET", "/drop", [](HttpRequest, ResponsePtr) {});
  r.add("GET", "/throw", [](HttpRequest, ResponsePtr) { throw std::runtime_error("boom"); });
  r.add("GET", "/abandon", [](HttpRequest, ResponsePtr res) {
    res->start_sse();
    res->write(sse_event("only"));
  });
  r.add("GET", "/bad-header", [](HttpRequest, ResponsePtr res) {
    res->send(200, "text/plain", "x", {{"X-Bad", "a\r\nInjected: yes"}});
  });
  r.add(
      "GET", "/compute",
      [this](HttpRequest req, ResponsePtr res) {
        std::this_thread::sleep_for(std::chrono::milliseconds(query_int(req, "ms", 0)));
        if (res->is_disconnected()) num_worker_saw_disconnect_.fetch_add(1);
        res->send(200, "text/plain", "computed");
      },
      RunOn::kWorker);
  r.add_prefix("GET", "/v1/models/", [](HttpRequest req, ResponsePtr res) {
    res->send(200, "text/plain", req.path_param);
  });
  return r;
}

}  // namespace strata::http::testing
