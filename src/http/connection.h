// Internal to src/http: Connection, one accepted TCP connection of an
// HttpServer and the state machine that serves its requests in order.
//
// Phases of a request:
//   kHead      reading the head (header_timeout; idle_timeout before its
//              first byte on a kept-alive connection)
//   kBody      reading the body (body_timeout)
//   kHandling  the handler (or the transport's own reply) answers; the
//              connection keeps reading, buffering up to
//              max_pipelined_bytes, so a client that closes or resets is
//              seen at once; writes have write_timeout
//   kLingering after a closing response: half-closed, discarding input
//              (max_linger_bytes, linger_timeout)
// then back to kHead (keep-alive) or closed.
//
// Reads are non-blocking read_some() calls after async_wait(wait_read):
// an idle connection holds no receive buffer. Lives on one IoWorker's
// thread: every method but the constructor runs there. Owned by the
// worker's registry from start() to close_now(), and by its pending
// operations; response channels hold it weakly.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/byte_buffer.h"
#include "http/chunked_decoder.h"
#include "http/http_request.h"
#include "http/request_parser.h"
#include "http/router.h"

namespace strata::http::detail {

class ResponseChannel;
struct IoWorker;
struct ServerCore;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Clock = std::chrono::steady_clock;

  Connection(std::shared_ptr<ServerCore> core, IoWorker& worker,
             boost::asio::ip::tcp::socket socket);
  ~Connection();

  void start();
  // A channel has bytes or news (posted by ResponseChannel).
  void on_response_ready(const ResponseChannel* channel);
  // Drain: closes the connection if it waits between requests.
  void close_if_idle();
  // Closes at once; an unfinished response sees a disconnect.
  void close_now();

 private:
  void end_channel();
  enum class Phase { kHead, kBody, kHandling, kLingering, kClosed };

  // ---- reading ----
  void read_more();
  void on_readable(const boost::system::error_code& ec);
  size_t read_room() const;
  void on_peer_closed();
  void process();
  void on_head();
  void on_body_complete();
  void dispatch();
  // ---- answering ----
  void reply(HttpReply reply, bool close);
  void reply_error(const HttpError& error, bool close);
  void pull_response();
  void start_write();
  void on_written(const boost::system::error_code& ec, size_t n);
  void on_response_done();
  void begin_next_request();
  void start_lingering();
  // ---- timing ----
  void set_deadline(Clock::time_point t);
  void clear_deadline() { set_deadline(Clock::time_point::max()); }
  void arm_timer();
  void on_timer(const boost::system::error_code& ec);
  void on_timeout();

  const std::shared_ptr<ServerCore> core_;
  IoWorker& worker_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  std::string remote_address_;
  uint16_t remote_port_ = 0;

  Phase phase_ = Phase::kHead;
  bool is_idle_ = false;          // kHead between requests, no byte of the next one yet
  bool is_in_read_loop_ = false;  // on_readable() is running
  bool is_waiting_ = false;       // async_wait(wait_read) in flight
  bool is_read_posted_ = false;   // a read continuation is posted
  bool is_read_paused_ = false;   // no reading until the current reply is written
  bool is_peer_eof_ = false;      // the client half-closed after a complete response
  ByteBuffer in_;
  RequestHeadParser parser_;
  HttpRequest request_;
  RequestHead head_;
  const Handler* handler_ = nullptr;
  RunOn run_on_ = RunOn::kIoThread;
  std::optional<ChunkedDecoder> chunked_;
  uint64_t body_remaining_ = 0;
  size_t linger_discarded_ = 0;

  std::shared_ptr<ResponseChannel> channel_;
  bool is_channel_dispatched_ = false;  // channel_ answers a handler (not the transport)
  bool is_response_complete_ = false;
  bool is_keep_alive_ = false;
  std::deque<std::string> out_;
  size_t out_offset_ = 0;      // bytes of out_.front() already written
  size_t interim_unsent_ = 0;  // bytes of out_ that are not the channel's (100 Continue)
  bool is_writing_ = false;
  std::vector<boost::asio::const_buffer> write_buffers_;

  Clock::time_point deadline_ = Clock::time_point::max();
  Clock::time_point timer_expiry_ = Clock::time_point::max();
  bool is_timer_armed_ = false;
  uint64_t timer_generation_ = 0;  // a timer wake-up from an older arm_timer() is stale
};

}  // namespace strata::http::detail
