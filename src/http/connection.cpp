#include "http/connection.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <cstring>

#include "http/http_response.h"
#include "http/io_worker.h"
#include "http/response_channel.h"
#include "http/server_core.h"

namespace strata::http::detail {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

constexpr size_t kHeadReadBytes = size_t{16} << 10;
constexpr size_t kBodyReadBytes = size_t{64} << 10;
// Heads, pipelined bytes and lingering input are read into a stack buffer
// and copied, so the receive buffer holds only what arrived; bodies are
// read straight into it.
constexpr size_t kScratchBytes = size_t{16} << 10;
// Reads per wake-up before yielding to the thread's other connections.
constexpr int kMaxReadsPerWakeup = 16;
// A body buffer is reserved up front only this far; beyond, it grows.
constexpr uint64_t kMaxBodyReserve = uint64_t{1} << 20;
constexpr std::string_view k100Continue = "HTTP/1.1 100 Continue\r\n\r\n";

}  // namespace

Connection::Connection(std::shared_ptr<ServerCore> core, IoWorker& worker, tcp::socket socket)
    : core_(std::move(core)),
      worker_(worker),
      socket_(std::move(socket)),
      timer_(worker.ioc),
      parser_(ParserLimits{core_->options.max_header_bytes, core_->options.max_headers}) {
  boost::system::error_code ec;
  const tcp::endpoint peer = socket_.remote_endpoint(ec);
  if (!ec) {
    remote_address_ = peer.address().to_string();
    remote_port_ = peer.port();
  }
}

Connection::~Connection() = default;

void Connection::start() {
  worker_.connections.emplace(this, shared_from_this());
  boost::system::error_code ec;
  socket_.non_blocking(true, ec);
  if (!ec) socket_.set_option(tcp::no_delay(true), ec);
  if (ec) {
    close_now();
    return;
  }
  phase_ = Phase::kHead;
  set_deadline(Clock::now() + core_->options.header_timeout);
  read_more();
}

// ---------------------------------------------------------------- reading

void Connection::read_more() {
  if (phase_ == Phase::kClosed || is_in_read_loop_ || is_waiting_ || is_read_posted_ ||
      is_read_paused_ || is_peer_eof_) {
    return;
  }
  // Read at once: bytes may already be waiting that no new readiness event
  // will announce.
  on_readable({});
}

size_t Connection::read_room() const {
  const HttpServerOptions& o = core_->options;
  switch (phase_) {
    case Phase::kHead: {
      const size_t limit = o.max_header_bytes + kHeadReadBytes;
      return in_.size() < limit ? std::min(kHeadReadBytes, limit - in_.size()) : 0;
    }
    case Phase::kBody:
      return kBodyReadBytes;
    case Phase::kHandling:
      return in_.size() < o.max_pipelined_bytes
                 ? std::min(kHeadReadBytes, o.max_pipelined_bytes - in_.size())
                 : 0;
    case Phase::kLingering:
      return linger_discarded_ < o.max_linger_bytes
                 ? std::min(kScratchBytes, o.max_linger_bytes - linger_discarded_)
                 : 0;
    case Phase::kClosed:
      return 0;
  }
  return 0;
}

void Connection::on_readable(const boost::system::error_code& ec) {
  if (phase_ == Phase::kClosed) return;
  if (ec) {
    if (ec != asio::error::operation_aborted) close_now();
    return;
  }
  is_in_read_loop_ = true;
  for (int i = 0; i < kMaxReadsPerWakeup; ++i) {
    if (phase_ == Phase::kClosed || is_read_paused_ || is_peer_eof_) break;
    const size_t room = read_room();
    if (room == 0) break;  // resumed when the pending response completes
    char scratch[kScratchBytes];
    const bool use_scratch = phase_ != Phase::kBody;
    char* dst = use_scratch ? scratch : in_.prepare(room);
    const size_t want = use_scratch ? std::min(room, kScratchBytes) : room;
    boost::system::error_code rec;
    const size_t n = socket_.read_some(asio::buffer(dst, want), rec);
    if (rec == asio::error::would_block || rec == asio::error::try_again) {
      is_in_read_loop_ = false;
      is_waiting_ = true;
      socket_.async_wait(tcp::socket::wait_read,
                         [self = shared_from_this()](const boost::system::error_code& e) {
                           self->is_waiting_ = false;
                           self->on_readable(e);
                         });
      return;
    }
    if (rec == asio::error::eof) {
      is_in_read_loop_ = false;
      on_peer_closed();
      return;
    }
    if (rec) {
      is_in_read_loop_ = false;
      close_now();  // reset by the peer, or another socket error
      return;
    }
    core_->counters.bytes_read.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
    if (phase_ == Phase::kLingering) {
      linger_discarded_ += n;
      continue;
    }
    if (use_scratch) std::memcpy(in_.prepare(n), scratch, n);
    in_.commit(n);
    process();
  }
  is_in_read_loop_ = false;
  if (phase_ == Phase::kLingering && read_room() == 0) {
    close_now();  // the client keeps sending after its answer: enough
    return;
  }
  if (phase_ == Phase::kClosed || is_read_paused_ || is_peer_eof_ || read_room() == 0) return;
  // Still readable after kMaxReadsPerWakeup reads: let other connections
  // of this thread run first.
  is_read_posted_ = true;
  asio::post(worker_.ioc, [self = shared_from_this()] {
    self->is_read_posted_ = false;
    self->on_readable({});
  });
}

void Connection::on_peer_closed() {
  // A client that half-closes after a request whose answer is fully queued
  // still gets it; any other EOF means the client is gone (as nginx treats
  // it) and an unfinished response sees a disconnect.
  if (phase_ == Phase::kHandling && channel_ != nullptr && channel_->is_finished()) {
    is_peer_eof_ = true;
    return;
  }
  close_now();
}

void Connection::process() {
  while (phase_ == Phase::kHead || phase_ == Phase::kBody) {
    if (in_.empty()) return;
    if (phase_ == Phase::kHead) {
      if (is_idle_) {
        // The next request's first byte: its head has header_timeout.
        is_idle_ = false;
        set_deadline(Clock::now() + core_->options.header_timeout);
      }
      const RequestHeadParser::State s = parser_.feed(in_.view(), &request_);
      if (s == RequestHeadParser::State::kNeedMore) return;
      if (s == RequestHeadParser::State::kError) {
        reply_error(parser_.error(), /*close=*/true);
        return;
      }
      on_head();
      continue;
    }
    if (head_.framing == BodyFraming::kLength) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(body_remaining_, in_.size()));
      request_.body.append(in_.view().data(), n);
      in_.consume(n);
      body_remaining_ -= n;
      if (body_remaining_ == 0) on_body_complete();
      continue;
    }
    size_t used = 0;
    const ChunkedDecoder::State s = chunked_->feed(in_.view(), &used, &request_.body);
    in_.consume(used);
    if (s == ChunkedDecoder::State::kError) {
      reply_error(chunked_->error(), /*close=*/true);
      return;
    }
    if (s == ChunkedDecoder::State::kDone) on_body_complete();
  }
}

void Connection::on_head() {
  const HttpServerOptions& o = core_->options;
  head_ = parser_.head();
  in_.consume(parser_.head_bytes());
  request_.remote_address = remote_address_;
  request_.remote_port = remote_port_;
  const bool is_body_pending = head_.framing == BodyFraming::kChunked ||
                               (head_.framing == BodyFraming::kLength && head_.content_length > 0);
  // Answering without reading the body: keep the connection only when the
  // whole body is here already (it is skipped).
  auto must_close_to_answer = [&] {
    if (!is_body_pending) return false;
    if (head_.framing == BodyFraming::kLength && in_.size() >= head_.content_length) {
      in_.consume(static_cast<size_t>(head_.content_length));
      return false;
    }
    return true;
  };
  if (head_.framing == BodyFraming::kLength && head_.content_length > o.max_body_bytes) {
    reply_error(HttpError{413, "request body too large"}, /*close=*/true);
    return;
  }
  if (o.head_hook) {
    std::optional<HttpReply> rejection = o.head_hook(request_);
    if (rejection) {
      core_->counters.num_transport_errors.fetch_add(1, std::memory_order_relaxed);
      reply(std::move(*rejection), must_close_to_answer());
      return;
    }
  }
  Router::Match m = core_->router.find(request_.method, request_.path);
  if (m.outcome == Router::Outcome::kNotFound) {
    reply_error(HttpError{404, "no route for this path"}, must_close_to_answer());
    return;
  }
  if (m.outcome == Router::Outcome::kMethodNotAllowed) {
    HttpReply r = core_->error_reply(HttpError{405, "method not allowed for this path"});
    r.headers.push_back(Header{"Allow", m.allow});
    core_->counters.num_transport_errors.fetch_add(1, std::memory_order_relaxed);
    reply(std::move(r), must_close_to_answer());
    return;
  }
  request_.path_param = std::move(m.path_param);
  handler_ = m.handler;
  run_on_ = m.run_on;
  if (!is_body_pending) {
    dispatch();
    return;
  }
  phase_ = Phase::kBody;
  set_deadline(Clock::now() + o.body_timeout);
  if (head_.framing == BodyFraming::kLength) {
    body_remaining_ = head_.content_length;
    request_.body.reserve(static_cast<size_t>(std::min(head_.content_length, kMaxBodyReserve)));
  } else {
    chunked_.emplace(o.max_body_bytes, o.max_trailer_bytes);
  }
  if (head_.expects_continue && in_.empty()) {
    out_.emplace_back(k100Continue);
    interim_unsent_ += k100Continue.size();
    start_write();
  }
}

void Connection::on_body_complete() {
  chunked_.reset();
  dispatch();
}

void Connection::dispatch() {
  phase_ = Phase::kHandling;
  clear_deadline();
  const ResponseContext context{request_.version_minor, request_.method == "HEAD",
                                request_.keep_alive};
  channel_ = std::make_shared<ResponseChannel>(core_, worker_.poster, weak_from_this(), context);
  is_channel_dispatched_ = true;
  is_response_complete_ = false;
  core_->counters.num_requests.fetch_add(1, std::memory_order_relaxed);
  core_->counters.num_active_requests.fetch_add(1, std::memory_order_relaxed);
  auto run = [handler = handler_, channel = channel_, request = std::move(request_)]() mutable {
    try {
      (*handler)(std::move(request), std::make_shared<HttpResponse>(channel));
    } catch (...) {
      channel->release();  // 500 unless it answered; an open stream is cut
    }
  };
  request_ = HttpRequest{};
  if (run_on_ == RunOn::kWorker && core_->worker_pool != nullptr) {
    asio::post(*core_->worker_pool, std::move(run));
  } else {
    run();
  }
}

// ---------------------------------------------------------------- answering

void Connection::reply(HttpReply reply, bool close) {
  phase_ = Phase::kHandling;
  clear_deadline();
  // Nothing more is read when closing: a refused body stays unread.
  if (close) is_read_paused_ = true;
  const ResponseContext context{request_.version_minor, request_.method == "HEAD",
                                request_.keep_alive && !close};
  channel_ = std::make_shared<ResponseChannel>(core_, worker_.poster, weak_from_this(), context);
  is_channel_dispatched_ = false;
  is_response_complete_ = false;
  (void)channel_->send(reply.status, reply.content_type, std::move(reply.body), reply.headers);
}

void Connection::reply_error(const HttpError& error, bool close) {
  core_->counters.num_transport_errors.fetch_add(1, std::memory_order_relaxed);
  reply(core_->error_reply(error), close);
}

void Connection::on_response_ready(const ResponseChannel* channel) {
  if (phase_ == Phase::kClosed || channel_.get() != channel) return;
  pull_response();
}

void Connection::pull_response() {
  ResponseChannel::Batch b = channel_->take();
  for (std::string& s : b.buffers) out_.push_back(std::move(s));
  is_keep_alive_ = b.keep_alive;
  if (b.is_aborted) {
    close_now();  // a reader far behind
    return;
  }
  if (b.is_complete) is_response_complete_ = true;
  start_write();
  if (!is_writing_ && out_.empty() && is_response_complete_) on_response_done();
}

void Connection::start_write() {
  if (is_writing_ || out_.empty() || phase_ == Phase::kClosed) return;
  constexpr size_t kMaxGather = 16;
  write_buffers_.clear();
  for (size_t i = 0; i < out_.size() && i < kMaxGather; ++i) {
    const size_t skip = i == 0 ? out_offset_ : 0;
    write_buffers_.emplace_back(out_[i].data() + skip, out_[i].size() - skip);
  }
  is_writing_ = true;
  if (phase_ == Phase::kHandling) set_deadline(Clock::now() + core_->options.write_timeout);
  socket_.async_write_some(
      write_buffers_, [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
        self->on_written(ec, n);
      });
}

void Connection::on_written(const boost::system::error_code& ec, size_t n) {
  is_writing_ = false;
  if (phase_ == Phase::kClosed) return;
  if (ec) {
    close_now();  // the client is gone (EPIPE, reset)
    return;
  }
  core_->counters.bytes_written.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  const size_t interim = std::min(n, interim_unsent_);
  interim_unsent_ -= interim;
  if (channel_ != nullptr && n > interim) channel_->on_written(n - interim);
  size_t left = n;
  while (left > 0) {
    const size_t front = out_.front().size() - out_offset_;
    if (left < front) {
      out_offset_ += left;
      break;
    }
    left -= front;
    out_.pop_front();
    out_offset_ = 0;
  }
  if (!out_.empty()) {
    start_write();
    return;
  }
  if (phase_ == Phase::kHandling) {
    if (is_response_complete_) {
      on_response_done();
      return;
    }
    clear_deadline();  // the handler is thinking: no deadline on it
  }
}

void Connection::end_channel() {
  if (channel_ == nullptr) return;
  if (is_channel_dispatched_) {
    core_->counters.num_active_requests.fetch_sub(1, std::memory_order_relaxed);
  }
  channel_.reset();
}

void Connection::on_response_done() {
  channel_->mark_completed();
  end_channel();
  if (is_peer_eof_) {
    close_now();
    return;
  }
  if (!is_keep_alive_ || core_->is_draining.load(std::memory_order_relaxed)) {
    start_lingering();
    return;
  }
  begin_next_request();
}

void Connection::begin_next_request() {
  phase_ = Phase::kHead;
  parser_.reset();
  request_ = HttpRequest{};
  head_ = RequestHead{};
  handler_ = nullptr;
  run_on_ = RunOn::kIoThread;
  is_read_paused_ = false;
  is_response_complete_ = false;
  if (in_.empty()) {
    in_.release();
    is_idle_ = true;
    set_deadline(Clock::now() + core_->options.idle_timeout);
  } else {
    is_idle_ = false;
    set_deadline(Clock::now() + core_->options.header_timeout);
  }
  process();  // pipelined requests already here
  read_more();
}

void Connection::start_lingering() {
  boost::system::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (ec) {
    close_now();
    return;
  }
  phase_ = Phase::kLingering;
  is_read_paused_ = false;
  linger_discarded_ = 0;
  in_.consume(in_.size());
  in_.release();
  set_deadline(Clock::now() + core_->options.linger_timeout);
  read_more();
}

void Connection::close_if_idle() {
  if (phase_ == Phase::kHead && is_idle_ && in_.empty() && !is_writing_) close_now();
}

void Connection::close_now() {
  if (phase_ == Phase::kClosed) return;
  phase_ = Phase::kClosed;
  std::shared_ptr<ResponseChannel> channel = channel_;
  if (channel != nullptr && channel->mark_disconnected()) {
    core_->counters.num_disconnects.fetch_add(1, std::memory_order_relaxed);
  }
  end_channel();
  boost::system::error_code ec;
  socket_.close(ec);
  timer_.cancel();
  is_timer_armed_ = false;
  core_->counters.num_open_connections.fetch_sub(1, std::memory_order_relaxed);
  out_.clear();
  in_.consume(in_.size());
  in_.release();
  // Every caller holds a strong reference of its own (a handler's capture),
  // so dropping the registry's does not destroy *this here.
  worker_.connections.erase(this);
}

// ---------------------------------------------------------------- timing

void Connection::set_deadline(Clock::time_point t) {
  deadline_ = t;
  if (t == Clock::time_point::max() || phase_ == Phase::kClosed) return;
  // A later deadline waits for the armed wake-up, which re-arms.
  if (!is_timer_armed_ || t < timer_expiry_) arm_timer();
}

void Connection::arm_timer() {
  timer_expiry_ = deadline_;
  is_timer_armed_ = true;
  const uint64_t generation = ++timer_generation_;
  timer_.expires_at(deadline_);
  timer_.async_wait([self = shared_from_this(), generation](const boost::system::error_code& ec) {
    if (generation != self->timer_generation_) return;  // re-armed since
    self->is_timer_armed_ = false;
    self->on_timer(ec);
  });
}

void Connection::on_timer(const boost::system::error_code& ec) {
  if (phase_ == Phase::kClosed || ec == asio::error::operation_aborted) return;
  if (deadline_ == Clock::time_point::max()) return;
  if (Clock::now() < deadline_) {
    arm_timer();
    return;
  }
  on_timeout();
}

void Connection::on_timeout() {
  core_->counters.num_timeouts.fetch_add(1, std::memory_order_relaxed);
  switch (phase_) {
    case Phase::kHead:
      // Nothing of a request yet: close quietly (nginx does the same).
      if (is_idle_ || (!parser_.has_started() && in_.empty())) {
        close_now();
      } else {
        reply_error(HttpError{408, "request head not received in time"}, /*close=*/true);
      }
      return;
    case Phase::kBody:
      reply_error(HttpError{408, "request body not received in time"}, /*close=*/true);
      return;
    case Phase::kHandling:  // a write made no progress: the reader stalled
    case Phase::kLingering:
    case Phase::kClosed:
      close_now();
      return;
  }
}

}  // namespace strata::http::detail
