#include "http/http_server.h"

#include <sys/resource.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cerrno>
#include <cstring>
#include <future>
#include <mutex>
#include <vector>

#include "http/connection.h"
#include "http/io_worker.h"
#include "http/server_core.h"

namespace strata::http {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using detail::Connection;
using detail::IoWorker;
using detail::ServerCore;

constexpr auto kAcceptPause = std::chrono::milliseconds(100);
constexpr auto kStopGrace = std::chrono::seconds(2);

Status validate(const HttpServerOptions& o) {
  if (o.num_io_threads < 1 || o.num_io_threads > 256) {
    return invalid_argument("http: num_io_threads must be in [1, 256]");
  }
  if (o.num_worker_threads < 0 || o.num_worker_threads > 1024) {
    return invalid_argument("http: num_worker_threads must be in [0, 1024]");
  }
  if (o.max_connections < 1) return invalid_argument("http: max_connections must be >= 1");
  if (o.max_header_bytes < 256) return invalid_argument("http: max_header_bytes must be >= 256");
  if (o.max_headers < 1) return invalid_argument("http: max_headers must be >= 1");
  if (o.listen_backlog < 1) return invalid_argument("http: listen_backlog must be >= 1");
  using ms = std::chrono::milliseconds;
  for (ms t :
       {o.header_timeout, o.body_timeout, o.idle_timeout, o.write_timeout, o.linger_timeout}) {
    if (t <= ms(0)) return invalid_argument("http: timeouts must be positive");
  }
  if (o.max_write_queue_bytes < 1) return invalid_argument("http: max_write_queue_bytes >= 1");
  return Status::ok();
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerOptions options, Router router)
      : core_(std::make_shared<ServerCore>(std::move(options), std::move(router))) {
    const int n = std::max(1, core_->options.num_io_threads);
    for (int i = 0; i < n; ++i) workers_.push_back(std::make_unique<IoWorker>());
  }

  ~Impl() {
    stop();
    join();
  }

  Status bind() {
    std::lock_guard<std::mutex> lock(mu_);
    STRATA_RETURN_IF_ERROR(validate(core_->options));
    if (acceptor_) return invalid_argument("http: bind() called twice");
    const HttpServerOptions& o = core_->options;
    const std::string where = o.host + ":" + std::to_string(o.port);
    boost::system::error_code ec;
    tcp::resolver resolver(workers_[0]->ioc);
    const auto endpoints =
        resolver.resolve(o.host, std::to_string(o.port),
                         tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec) return io_error("http: cannot listen on " + where + ": " + ec.message());
    for (const auto& entry : endpoints) {
      tcp::acceptor acceptor(workers_[0]->ioc);
      const tcp::endpoint ep = entry.endpoint();
      acceptor.open(ep.protocol(), ec);
      if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
      if (!ec) acceptor.bind(ep, ec);
      if (!ec) acceptor.listen(o.listen_backlog, ec);
      if (!ec) acceptor.non_blocking(true, ec);
      if (ec) continue;
      port_ = acceptor.local_endpoint(ec).port();
      if (ec) continue;
      acceptor_.emplace(std::move(acceptor));
      return Status::ok();
    }
    return io_error("http: cannot listen on " + where + ": " +
                    (ec ? ec.message() : std::string("no address")));
  }

  uint16_t port() const { return port_; }

  Status start() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!acceptor_) return invalid_argument("http: start() before a successful bind()");
    if (is_started_ || is_stopped_) return invalid_argument("http: start() called twice");
    if (core_->router.has_worker_routes() && core_->options.num_worker_threads < 1) {
      return invalid_argument("http: routes run on workers but num_worker_threads is 0");
    }
    is_started_ = true;
    // The 503 for connections past max_connections, formatted once.
    {
      const HttpReply r = core_->error_reply(HttpError{503, "too many connections"});
      refusal_ = "HTTP/1.1 503 " + std::string(detail::reason_phrase(503)) +
                 "\r\nContent-Type: " + r.content_type +
                 "\r\nContent-Length: " + std::to_string(r.body.size()) +
                 "\r\nConnection: close\r\nRetry-After: 1\r\n\r\n" + r.body;
    }
    if (core_->router.has_worker_routes()) {
      worker_pool_ = std::make_unique<asio::thread_pool>(
          static_cast<size_t>(core_->options.num_worker_threads));
      core_->worker_pool = worker_pool_.get();
    }
    accept_pause_.emplace(workers_[0]->ioc);
    asio::post(workers_[0]->ioc, [this] { do_accept(); });
    for (auto& w : workers_) {
      IoWorker* worker = w.get();
      worker->thread = std::thread([worker, core = core_] {
        for (;;) {
          try {
            worker->ioc.run();
            return;
          } catch (...) {
            // A handler threw past its own guard: count it, keep serving.
            core->counters.num_transport_errors.fetch_add(1, std::memory_order_relaxed);
          }
        }
      });
    }
    return Status::ok();
  }

  void stop_accepting() {
    std::lock_guard<std::mutex> lock(mu_);
    core_->is_draining.store(true);
    if (!is_started_ || is_stopped_) return;
    asio::post(workers_[0]->ioc, [this] { close_acceptor(); });
    for (auto& w : workers_) {
      IoWorker* worker = w.get();
      asio::post(worker->ioc, [worker] {
        std::vector<Connection*> open;
        for (auto& [c, owner] : worker->connections) open.push_back(c);
        for (Connection* c : open) c->close_if_idle();
      });
    }
  }

  void stop() {
    std::unique_lock<std::mutex> lock(mu_);
    if (is_stopped_) return;
    is_stopped_ = true;
    core_->is_draining.store(true);
    if (!is_started_) {
      boost::system::error_code ec;
      if (acceptor_) acceptor_->close(ec);
      return;
    }
    const bool is_io_thread = on_io_thread();
    std::vector<std::future<void>> closed;
    asio::post(workers_[0]->ioc, [this] { close_acceptor(); });
    for (auto& w : workers_) {
      IoWorker* worker = w.get();
      auto done = std::make_shared<std::promise<void>>();
      closed.push_back(done->get_future());
      asio::post(worker->ioc, [worker, done] {
        std::vector<std::shared_ptr<Connection>> open;
        for (auto& [c, owner] : worker->connections) open.push_back(owner);
        for (auto& c : open) c->close_now();
        done->set_value();
      });
    }
    lock.unlock();
    if (!is_io_thread) {
      const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
      for (auto& f : closed) f.wait_until(deadline);
    }
    for (auto& w : workers_) {
      w->work.reset();
      w->ioc.stop();
    }
    if (!is_io_thread) join();
  }

  HttpServerStats stats() const {
    const detail::ServerCounters& c = core_->counters;
    HttpServerStats s;
    s.num_open_connections = c.num_open_connections.load();
    s.num_accepted = c.num_accepted.load();
    s.num_refused = c.num_refused.load();
    s.num_requests = c.num_requests.load();
    s.num_active_requests = c.num_active_requests.load();
    s.num_transport_errors = c.num_transport_errors.load();
    s.num_timeouts = c.num_timeouts.load();
    s.num_disconnects = c.num_disconnects.load();
    s.bytes_read = c.bytes_read.load();
    s.bytes_written = c.bytes_written.load();
    return s;
  }

 private:
  bool on_io_thread() const {
    for (const auto& w : workers_) {
      if (w->thread.get_id() == std::this_thread::get_id()) return true;
    }
    return false;
  }

  // Joins the I/O threads and the worker pool (once), then detaches the
  // posters so response handles that outlive the server never reach a dead
  // io_context.
  void join() {
    for (auto& w : workers_) {
      if (w->thread.joinable() && w->thread.get_id() != std::this_thread::get_id()) {
        w->thread.join();
      }
    }
    if (worker_pool_) {
      worker_pool_->stop();  // queued handlers are dropped, running ones finish
      worker_pool_->join();
    }
    for (auto& w : workers_) w->poster->detach();
  }

  // ---- accepting (on workers_[0]'s thread) ----
  void do_accept() {
    if (!acceptor_ || !acceptor_->is_open()) return;
    IoWorker& target = *workers_[next_worker_];
    next_worker_ = (next_worker_ + 1) % workers_.size();
    acceptor_->async_accept(
        target.ioc, [this, &target](const boost::system::error_code& ec, tcp::socket socket) {
          on_accept(ec, std::move(socket), target);
        });
  }

  void on_accept(const boost::system::error_code& ec, tcp::socket socket, IoWorker& target) {
    if (!acceptor_->is_open() || ec == asio::error::operation_aborted) return;
    if (ec) {
      if (ec == asio::error::no_descriptors || ec.value() == ENFILE ||
          ec == asio::error::no_buffer_space || ec == asio::error::no_memory) {
        // Out of descriptors: pause instead of spinning on a full backlog.
        accept_pause_->expires_after(kAcceptPause);
        accept_pause_->async_wait([this](const boost::system::error_code& e) {
          if (!e) do_accept();
        });
        return;
      }
      do_accept();  // the client gave up (ECONNABORTED) or a transient error
      return;
    }
    detail::ServerCounters& c = core_->counters;
    c.num_accepted.fetch_add(1, std::memory_order_relaxed);
    if (c.num_open_connections.load() >= static_cast<int64_t>(core_->options.max_connections)) {
      c.num_refused.fetch_add(1, std::memory_order_relaxed);
      refuse(socket);
      do_accept();
      return;
    }
    c.num_open_connections.fetch_add(1, std::memory_order_relaxed);
    asio::post(target.ioc, [core = core_, &target, s = std::move(socket)]() mutable {
      std::make_shared<Connection>(core, target, std::move(s))->start();
    });
    do_accept();
  }

  // An immediate 503 and close, from the accepting thread, never waiting:
  // the response fits a fresh socket's send buffer. What the client already
  // sent is read and dropped first, so the close is a FIN and not a reset
  // that could discard the response.
  void refuse(tcp::socket& socket) {
    boost::system::error_code ec;
    socket.non_blocking(true, ec);
    socket.write_some(asio::buffer(refusal_), ec);
    socket.shutdown(tcp::socket::shutdown_send, ec);
    char sink[16 << 10];
    socket.read_some(asio::buffer(sink), ec);
    socket.close(ec);
  }

  void close_acceptor() {
    boost::system::error_code ec;
    if (acceptor_) acceptor_->close(ec);
    if (accept_pause_) accept_pause_->cancel();
  }

  std::shared_ptr<ServerCore> core_;
  std::vector<std::unique_ptr<IoWorker>> workers_;
  std::unique_ptr<asio::thread_pool> worker_pool_;
  std::mutex mu_;  // bind/start/stop_accepting/stop
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::steady_timer> accept_pause_;
  size_t next_worker_ = 0;
  std::string refusal_;
  uint16_t port_ = 0;
  bool is_started_ = false;
  bool is_stopped_ = false;
};

HttpServer::HttpServer(HttpServerOptions options, Router router)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(router))) {}
HttpServer::~HttpServer() = default;
Status HttpServer::bind() {
  return impl_->bind();
}
uint16_t HttpServer::port() const {
  return impl_->port();
}
Status HttpServer::start() {
  return impl_->start();
}
void HttpServer::stop_accepting() {
  impl_->stop_accepting();
}
void HttpServer::stop() {
  impl_->stop();
}
HttpServerStats HttpServer::stats() const {
  return impl_->stats();
}

Result<uint64_t> raise_open_file_limit(uint64_t wanted) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
    return io_error(std::string("http: getrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
  }
  if (rl.rlim_cur < wanted) {
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? wanted : std::min<rlim_t>(wanted, rl.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
      return io_error(std::string("http: setrlimit(RLIMIT_NOFILE): ") + std::strerror(errno));
    }
  }
  if (rl.rlim_cur < wanted) {
    return Status(StatusCode::kResourceExhausted,
                  "http: open-file limit is " + std::to_string(rl.rlim_cur) + " (hard limit), " +
                      std::to_string(wanted) + " wanted; raise it with ulimit -n");
  }
  return static_cast<uint64_t>(rl.rlim_cur);
}

}  // namespace strata::http
