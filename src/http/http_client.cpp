#include "http/http_client.h"

#include <sys/socket.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <cerrno>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/request_parser.h"
#include "http/server_core.h"

namespace strata::http {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr size_t kBodyBufferBytes = size_t{16} << 10;
constexpr auto kShutdownGrace = std::chrono::seconds(2);

bool is_value_ok(std::string_view v) {
  for (char c : v) {
    const unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return false;
  }
  return true;
}

// The request's bytes, or an error message.
std::optional<std::string> format_request(const ClientRequest& r, std::string* error) {
  auto bad = [&](std::string m) {
    *error = std::move(m);
    return std::nullopt;
  };
  if (r.method.empty()) return bad("http client: empty method");
  for (char c : r.method) {
    if (!is_token_char(static_cast<unsigned char>(c))) return bad("http client: invalid method");
  }
  if (r.target.empty() || r.target.front() != '/') {
    return bad("http client: target must be origin-form (\"/path\")");
  }
  for (char c : r.target) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return bad("http client: invalid byte in target");
  }
  if (r.host.empty() || !is_value_ok(r.host) || r.host.find(' ') != std::string::npos) {
    return bad("http client: invalid host");
  }
  std::string out = r.method + " " + r.target + " HTTP/1.1\r\nHost: ";
  const bool is_v6 = r.host.find(':') != std::string::npos;
  out += is_v6 ? "[" + r.host + "]" : r.host;
  out += ":" + std::to_string(r.port) + "\r\n";
  for (const Header& h : r.headers) {
    if (h.name.empty()) return bad("http client: empty header name");
    for (char c : h.name) {
      if (!is_token_char(static_cast<unsigned char>(c))) {
        return bad("http client: invalid header name");
      }
    }
    if (iequals(h.name, "Host") || iequals(h.name, "Content-Length") ||
        iequals(h.name, "Transfer-Encoding") || iequals(h.name, "Connection")) {
      return bad("http client: header " + h.name + " is set by the client");
    }
    if (!is_value_ok(h.value)) return bad("http client: control byte in header " + h.name);
    out += h.name + ": " + h.value + "\r\n";
  }
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH") {
    out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  }
  out += "\r\n";
  out += r.body;
  return out;
}

// A pooled connection is usable if the peer has neither closed it nor sent
// anything unasked.
bool is_idle_connection_alive(tcp::socket& s) {
  char c;
  const ssize_t n = ::recv(s.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

std::string_view client_error_name(ClientError e) {
  switch (e) {
    case ClientError::kNone:
      return "ok";
    case ClientError::kInvalidRequest:
      return "invalid request";
    case ClientError::kConnect:
      return "connect failed";
    case ClientError::kTimeout:
      return "timeout";
    case ClientError::kCancelled:
      return "cancelled";
    case ClientError::kProtocol:
      return "protocol error";
    case ClientError::kClosed:
      return "connection closed";
  }
  return "unknown";
}

// ---------------------------------------------------------------- internals

namespace detail {

class ClientCallState;

struct ClientConnection {
  explicit ClientConnection(asio::io_context& ioc) : socket(ioc) {}
  tcp::socket socket;
  boost::beast::flat_buffer buffer;
};

// What a handle shares with its call: written by the caller, read on the
// I/O thread (`call` is touched only there).
struct CallShared {
  ClientRequest request;
  ClientCallbacks callbacks;
  std::atomic<bool> is_cancelled{false};
  std::weak_ptr<ClientCallState> call;
};

}  // namespace detail

using detail::CallShared;
using detail::ClientCallState;
using detail::ClientConnection;

namespace detail {

// The client's I/O thread, pool and calls in flight.
class ClientCore {
 public:
  explicit ClientCore(HttpClientOptions options)
      : options_(std::move(options)),
        ioc_(1),
        poster_(std::make_shared<detail::Poster>(&ioc_)),
        work_(ioc_.get_executor()),
        thread_([this] { ioc_.run(); }) {}

  ~ClientCore() = default;

  void shutdown();
  std::shared_ptr<ClientCall> start(ClientRequest request, ClientCallbacks callbacks);
  HttpClientStats stats() const {
    HttpClientStats s;
    s.num_connects = num_connects_.load();
    s.num_reuses = num_reuses_.load();
    s.num_retries = num_retries_.load();
    s.num_idle = num_idle_.load();
    return s;
  }

  // ---- I/O thread ----
  std::shared_ptr<ClientConnection> acquire(const std::string& key);
  void release(const std::string& key, std::shared_ptr<ClientConnection> conn);

  const HttpClientOptions options_;
  asio::io_context ioc_;
  std::shared_ptr<detail::Poster> poster_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  struct Idle {
    std::shared_ptr<ClientConnection> conn;
    Clock::time_point since;
  };
  // Declared after ioc_: destroyed first, while the io_context exists.
  std::unordered_map<std::string, std::vector<Idle>> pool_;
  std::unordered_map<ClientCallState*, std::shared_ptr<ClientCallState>> calls_;
  std::atomic<int64_t> num_connects_{0};
  std::atomic<int64_t> num_reuses_{0};
  std::atomic<int64_t> num_retries_{0};
  std::atomic<int64_t> num_idle_{0};
  std::thread thread_;
};

}  // namespace detail

namespace detail {

// One call's I/O state; lives on the client's I/O thread only.
class ClientCallState : public std::enable_shared_from_this<ClientCallState> {
 public:
  ClientCallState(ClientCore* impl, std::shared_ptr<CallShared> shared)
      : impl_(impl),
        shared_(std::move(shared)),
        resolver_(impl->ioc_),
        timer_(impl->ioc_),
        body_buffer_(new char[kBodyBufferBytes]) {
    key_ = shared_->request.host + ":" + std::to_string(shared_->request.port);
  }

  void begin() {
    impl_->calls_.emplace(this, shared_from_this());
    if (shared_->is_cancelled.load())
      return fail(ClientError::kCancelled, "http client: cancelled");
    std::string error;
    std::optional<std::string> bytes = format_request(shared_->request, &error);
    if (!bytes) return fail(ClientError::kInvalidRequest, error);
    request_bytes_ = std::move(*bytes);
    if (std::shared_ptr<ClientConnection> c = impl_->acquire(key_)) {
      conn_ = std::move(c);
      is_reused_ = true;
      impl_->num_reuses_.fetch_add(1, std::memory_order_relaxed);
      send_request();
      return;
    }
    connect_fresh();
  }

  void cancel() { fail(ClientError::kCancelled, "http client: cancelled"); }

 private:
  using Ms = std::chrono::milliseconds;
  enum class Stage { kConnect, kResponse, kBody };

  template <typename F>
  auto guarded(F f) {
    return [self = shared_from_this(), generation = generation_, f](auto&&... args) mutable {
      if (self->is_done_ || generation != self->generation_) return;
      f(self.get(), std::forward<decltype(args)>(args)...);
    };
  }

  void connect_fresh() {
    is_reused_ = false;
    conn_ = std::make_shared<ClientConnection>(impl_->ioc_);
    impl_->num_connects_.fetch_add(1, std::memory_order_relaxed);
    set_deadline(Stage::kConnect, impl_->options_.connect_timeout);
    const ClientRequest& r = shared_->request;
    boost::system::error_code ec;
    const asio::ip::address address = asio::ip::make_address(r.host, ec);
    if (!ec) {
      conn_->socket.async_connect(
          tcp::endpoint(address, r.port),
          guarded(
              [](ClientCallState* c, const boost::system::error_code& e) { c->on_connected(e); }));
      return;
    }
    resolver_.async_resolve(
        r.host, std::to_string(r.port), tcp::resolver::numeric_service,
        guarded([](ClientCallState* c, const boost::system::error_code& e,
                   const tcp::resolver::results_type& results) {
          if (e) {
            return c->fail(ClientError::kConnect,
                           "http client: cannot resolve " + c->key_ + ": " + e.message());
          }
          asio::async_connect(
              c->conn_->socket, results,
              c->guarded([](ClientCallState* c2, const boost::system::error_code& e2,
                            const tcp::endpoint&) { c2->on_connected(e2); }));
        }));
  }

  void on_connected(const boost::system::error_code& ec) {
    if (ec) {
      return fail(ClientError::kConnect,
                  "http client: cannot connect to " + key_ + ": " + ec.message());
    }
    boost::system::error_code ignored;
    conn_->socket.set_option(tcp::no_delay(true), ignored);
    send_request();
  }

  void send_request() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(impl_->options_.max_response_header_bytes));
    parser_->body_limit(boost::none);  // streamed: the caller decides
    if (shared_->request.method == "HEAD") parser_->skip(true);
    set_deadline(Stage::kResponse,
                 shared_->request.response_timeout.value_or(impl_->options_.response_timeout));
    asio::async_write(conn_->socket, asio::buffer(request_bytes_),
                      guarded([](ClientCallState* c, const boost::system::error_code& e, size_t) {
                        if (e) return c->retry_or_fail("write: " + e.message());
                        c->read_head();
                      }));
  }

  void read_head() {
    bhttp::async_read_header(conn_->socket, conn_->buffer, *parser_,
                             guarded([](ClientCallState* c, const boost::system::error_code& e,
                                        size_t) { c->on_head(e); }));
  }

  void on_head(const boost::system::error_code& ec) {
    if (ec) return retry_or_fail("reading the response head: " + ec.message());
    ClientResponseHead head;
    head.status = static_cast<int>(parser_->get().result_int());
    for (const auto& field : parser_->get()) {
      head.headers.push_back(Header{std::string(field.name_string()), std::string(field.value())});
    }
    if (shared_->callbacks.on_head) shared_->callbacks.on_head(head);
    if (is_done_) return;  // the callback cancelled
    if (parser_->is_done()) return succeed();
    set_deadline(Stage::kBody, impl_->options_.read_timeout);
    read_body();
  }

  void read_body() {
    parser_->get().body().data = body_buffer_.get();
    parser_->get().body().size = kBodyBufferBytes;
    bhttp::async_read_some(conn_->socket, conn_->buffer, *parser_,
                           guarded([](ClientCallState* c, boost::system::error_code e, size_t) {
                             if (e == bhttp::error::need_buffer) e = {};
                             c->on_body(e);
                           }));
  }

  void on_body(const boost::system::error_code& ec) {
    const size_t got = kBodyBufferBytes - parser_->get().body().size;
    if (got > 0 && shared_->callbacks.on_data &&
        !shared_->callbacks.on_data(std::string_view(body_buffer_.get(), got))) {
      return fail(ClientError::kCancelled, "http client: cancelled by on_data");
    }
    if (is_done_) return;
    if (ec) {
      const bool is_closed = ec == bhttp::error::partial_message || ec == asio::error::eof ||
                             ec == asio::error::connection_reset;
      return fail(is_closed ? ClientError::kClosed : ClientError::kProtocol,
                  "http client: reading the response body from " + key_ + ": " + ec.message());
    }
    if (parser_->is_done()) return succeed();
    set_deadline(Stage::kBody, impl_->options_.read_timeout);
    read_body();
  }

  // A reused connection that fails before any response byte was most likely
  // closed by the server while idle: once more on a fresh one.
  void retry_or_fail(const std::string& what) {
    if (is_reused_ && !has_retried_ && (!parser_ || !parser_->got_some())) {
      has_retried_ = true;
      impl_->num_retries_.fetch_add(1, std::memory_order_relaxed);
      boost::system::error_code ignored;
      conn_->socket.close(ignored);
      // Its cancelled operations still refer to it (Beast's read ops touch
      // the buffer as they complete): kept until this call goes.
      retired_conn_ = std::move(conn_);
      ++generation_;  // handlers of the old connection are stale
      connect_fresh();
      return;
    }
    const bool is_protocol = parser_ && parser_->got_some();
    fail(is_protocol ? ClientError::kProtocol : ClientError::kClosed,
         "http client: " + key_ + ": " + what);
  }

  void succeed() {
    finish_io();
    if (parser_->keep_alive()) {
      impl_->release(key_, std::move(conn_));
    } else {
      close_connection();
    }
    complete(ClientOutcome{});
  }

  void fail(ClientError error, std::string message) {
    if (is_done_) return;
    finish_io();
    close_connection();
    complete(ClientOutcome{error, std::move(message)});
  }

  void finish_io() {
    is_done_ = true;
    timer_.cancel();
    resolver_.cancel();
  }

  // Closes the socket; the ClientConnection itself stays with the call,
  // since operations cancelled by the close still refer to it.
  void close_connection() {
    if (conn_) {
      boost::system::error_code ignored;
      conn_->socket.close(ignored);
    }
  }

  void complete(const ClientOutcome& outcome) {
    std::shared_ptr<ClientCallState> self = shared_from_this();
    impl_->calls_.erase(this);
    // Taken out first: what the callbacks hold dies after they ran.
    ClientCallbacks callbacks = std::move(shared_->callbacks);
    shared_->callbacks = ClientCallbacks{};
    if (callbacks.on_complete) callbacks.on_complete(outcome);
  }

  void set_deadline(Stage stage, Ms timeout) {
    stage_ = stage;
    timeout_ = timeout;
    timer_.expires_after(timeout);
    timer_.async_wait(guarded([stage](ClientCallState* c, const boost::system::error_code& e) {
      if (e || c->stage_ != stage || Clock::now() < c->timer_.expiry()) return;
      static constexpr const char* kWhat[] = {"connect", "response", "read"};
      c->fail(ClientError::kTimeout, "http client: " + std::string(kWhat[static_cast<int>(stage)]) +
                                         " timeout after " + std::to_string(c->timeout_.count()) +
                                         " ms (" + c->key_ + ")");
    }));
  }

  ClientCore* const impl_;
  const std::shared_ptr<CallShared> shared_;
  std::string key_;
  std::string request_bytes_;
  tcp::resolver resolver_;
  asio::steady_timer timer_;
  std::unique_ptr<char[]> body_buffer_;
  std::shared_ptr<ClientConnection> conn_;
  std::shared_ptr<ClientConnection> retired_conn_;  // the stale one a retry replaced
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  Stage stage_ = Stage::kConnect;
  Ms timeout_{0};
  uint64_t generation_ = 0;
  bool is_reused_ = false;
  bool has_retried_ = false;
  bool is_done_ = false;
};

}  // namespace detail

namespace {

class CallHandle : public ClientCall {
 public:
  CallHandle(std::shared_ptr<detail::Poster> poster, std::shared_ptr<CallShared> shared)
      : poster_(std::move(poster)), shared_(std::move(shared)) {}
  void cancel() override {
    shared_->is_cancelled.store(true);
    poster_->post([shared = shared_] {
      if (std::shared_ptr<ClientCallState> c = shared->call.lock()) c->cancel();
    });
  }

 private:
  std::shared_ptr<detail::Poster> poster_;
  std::shared_ptr<CallShared> shared_;
};

}  // namespace

std::shared_ptr<ClientConnection> detail::ClientCore::acquire(const std::string& key) {
  auto it = pool_.find(key);
  if (it == pool_.end()) return nullptr;
  std::vector<Idle>& idle = it->second;
  const Clock::time_point now = Clock::now();
  while (!idle.empty()) {
    Idle entry = std::move(idle.back());
    idle.pop_back();
    num_idle_.fetch_sub(1, std::memory_order_relaxed);
    if (now - entry.since <= options_.pool_idle_timeout && entry.conn->buffer.size() == 0 &&
        is_idle_connection_alive(entry.conn->socket)) {
      return std::move(entry.conn);
    }
    boost::system::error_code ignored;
    entry.conn->socket.close(ignored);
  }
  return nullptr;
}

void detail::ClientCore::release(const std::string& key, std::shared_ptr<ClientConnection> conn) {
  std::vector<Idle>& idle = pool_[key];
  const Clock::time_point now = Clock::now();
  // Drop the expired ones (oldest first in the vector).
  size_t expired = 0;
  while (expired < idle.size() && now - idle[expired].since > options_.pool_idle_timeout) {
    ++expired;
  }
  if (expired > 0) {
    idle.erase(idle.begin(), idle.begin() + static_cast<std::ptrdiff_t>(expired));
    num_idle_.fetch_sub(static_cast<int64_t>(expired), std::memory_order_relaxed);
  }
  if (idle.size() >= options_.max_idle_per_host) {
    boost::system::error_code ignored;
    conn->socket.close(ignored);
    return;
  }
  idle.push_back(Idle{std::move(conn), now});
  num_idle_.fetch_add(1, std::memory_order_relaxed);
}

std::shared_ptr<ClientCall> detail::ClientCore::start(ClientRequest request,
                                                      ClientCallbacks callbacks) {
  auto shared = std::make_shared<CallShared>();
  shared->request = std::move(request);
  shared->callbacks = std::move(callbacks);
  auto handle = std::make_shared<CallHandle>(poster_, shared);
  const bool posted = poster_->post([this, shared] {
    auto call = std::make_shared<ClientCallState>(this, shared);
    shared->call = call;
    call->begin();
  });
  if (!posted && shared->callbacks.on_complete) {
    shared->callbacks.on_complete(ClientOutcome{ClientError::kCancelled, "http client: stopped"});
  }
  return handle;
}

void detail::ClientCore::shutdown() {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> cancelled = done->get_future();
  const bool posted = poster_->post([this, done] {
    std::vector<std::shared_ptr<ClientCallState>> open;
    for (auto& [c, owner] : calls_) open.push_back(owner);
    for (auto& c : open) c->cancel();
    for (auto& [key, idle] : pool_) {
      for (Idle& i : idle) {
        boost::system::error_code ignored;
        i.conn->socket.close(ignored);
      }
    }
    pool_.clear();
    num_idle_.store(0);
    done->set_value();
  });
  if (posted) cancelled.wait_for(kShutdownGrace);
  work_.reset();
  ioc_.stop();
  if (thread_.joinable()) thread_.join();
  poster_->detach();
  calls_.clear();
}

// ---------------------------------------------------------------- HttpClient

HttpClient::HttpClient(HttpClientOptions options)
    : impl_(std::make_unique<detail::ClientCore>(std::move(options))) {}

HttpClient::~HttpClient() {
  impl_->shutdown();
}

std::shared_ptr<ClientCall> HttpClient::start(ClientRequest request, ClientCallbacks callbacks) {
  return impl_->start(std::move(request), std::move(callbacks));
}

std::future<ClientResult> HttpClient::fetch(ClientRequest request) {
  // Touched only by the callbacks, on the I/O thread.
  struct State {
    std::promise<ClientResult> promise;
    ClientResult result;
    bool is_too_large = false;
  };
  auto state = std::make_shared<State>();
  std::future<ClientResult> future = state->promise.get_future();
  const uint64_t limit = impl_->options_.max_buffered_body_bytes;
  ClientCallbacks cb;
  cb.on_head = [state](const ClientResponseHead& head) { state->result.response.head = head; };
  cb.on_data = [state, limit](std::string_view data) {
    if (state->result.response.body.size() + data.size() > limit) {
      state->is_too_large = true;
      return false;
    }
    state->result.response.body.append(data);
    return true;
  };
  cb.on_complete = [state](const ClientOutcome& outcome) {
    state->result.outcome = outcome;
    if (state->is_too_large) {
      state->result.outcome = ClientOutcome{
          ClientError::kProtocol, "http client: response body over max_buffered_body_bytes"};
    }
    if (!state->result.outcome.ok()) state->result.response = ClientResponse{};
    state->promise.set_value(std::move(state->result));
  };
  start(std::move(request), std::move(cb));
  return future;
}

HttpClientStats HttpClient::stats() const {
  return impl_->stats();
}

}  // namespace strata::http
