// HttpServer: an event-driven HTTP/1.1 server on Boost.Asio.
//
// A fixed number of I/O threads (num_io_threads), each running its own
// io_context; an accepted connection lives on one of them (round-robin)
// for its whole life, so everything about a connection runs on one thread
// and needs no lock. No thread per connection: an idle keep-alive
// connection costs a socket, a timer and a few hundred bytes.
//
// What the transport does (RFC 9112, strict as nginx and h2o):
//   - parses request heads strictly (see request_parser.h for every 400,
//     417, 431 and 505) before reading any body; a declared body over
//     max_body_bytes gets 413 and the connection is closed unread; a chunked
//     body that grows past it, the same (chunked_decoder.h);
//   - keep-alive and pipelining: requests on a connection are answered in
//     order, one at a time; bytes of later requests wait (at most
//     max_pipelined_bytes of them) until the previous response is written;
//   - header, body, idle, write and lingering-close timeouts per connection;
//   - max_connections: past it a new connection gets an immediate 503 and
//     is closed, and the others are not disturbed;
//   - HTTP/1.0 (keep-alive only when asked), Connection: close,
//     Expect: 100-continue, HEAD (answered by the GET route, body dropped),
//     origin-form and absolute-form targets;
//   - routing (router.h), the head hook (auth), and responses written from
//     any thread (http_response.h), with disconnect notification.
// The OpenAI layer above supplies the handlers, the head hook and the
// error bodies; nothing here knows about it.
//
// Lifecycle: construct, bind(), start(), then stop_accepting() (drain) and
// stop(). The last three are thread-safe and may be called from a signal-
// handling thread; none blocks on a client. Not restartable after stop().
// Destruction stops the server. Handlers must not call stop() or destroy
// the server (their own thread cannot be joined).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "http/http_error.h"
#include "http/http_request.h"
#include "http/http_response.h"
#include "http/router.h"
#include "util/status.h"

namespace strata::http {

struct HttpServerOptions {
  // Address to listen on: an IPv4/IPv6 literal or a host name.
  std::string host = "127.0.0.1";
  // 0 = any free port (HttpServer::port() tells which).
  uint16_t port = 8000;
  // I/O threads. 2 suits this 2-core machine; past the core count it only
  // adds context switches.
  int num_io_threads = 2;
  // Threads for routes added with RunOn::kWorker (none are started when no
  // route uses them).
  int num_worker_threads = 2;
  // Open connections (lingering ones included). Beyond it a new connection
  // gets 503 and is closed. Keep it under RLIMIT_NOFILE (see
  // raise_open_file_limit()); accept() failing with EMFILE pauses accepting
  // for 100 ms instead of spinning.
  size_t max_connections = 10000;
  // Kernel accept queue (clamped by net.core.somaxconn).
  int listen_backlog = 4096;
  // Request body limit, declared (Content-Length) or chunked.
  uint64_t max_body_bytes = uint64_t{4} << 20;
  // Head limits: bytes of request line + fields, and the number of fields.
  size_t max_header_bytes = size_t{16} << 10;
  size_t max_headers = 100;
  // Trailer section of a chunked body.
  size_t max_trailer_bytes = size_t{4} << 10;
  // Bytes of pipelined requests buffered while a response is pending;
  // beyond it the connection stops reading until the response is written
  // (and a disconnect is then only seen by the next write).
  size_t max_pipelined_bytes = size_t{64} << 10;
  // A request's head must arrive within this of its first byte (of the
  // connection's accept, for the first request): the slowloris guard.
  std::chrono::milliseconds header_timeout{10000};
  // Its body must arrive within this of the end of its head.
  std::chrono::milliseconds body_timeout{60000};
  // A keep-alive connection with no request for this long is closed.
  std::chrono::milliseconds idle_timeout{5000};
  // A pending write that makes no progress for this long (a reader that
  // does not drain) closes the connection; the handler sees a disconnect.
  std::chrono::milliseconds write_timeout{30000};
  // Streamed bytes queued and not yet written, per response. A write()
  // beyond it fails and closes the connection (a reader far behind).
  // Complete responses (send()) are never refused for their size.
  size_t max_write_queue_bytes = size_t{1} << 20;
  // After a response with Connection: close the server half-closes and
  // discards what the client still sends, at most this many bytes for at
  // most linger_timeout, so the client reads the response instead of a
  // reset (nginx's lingering_close, bounded).
  size_t max_linger_bytes = size_t{64} << 10;
  std::chrono::milliseconds linger_timeout{2000};

  // Runs on the I/O thread when a head has been parsed, before routing and
  // before any body is read (auth goes here). A reply is sent instead of
  // calling the handler (the connection is closed if a body was pending).
  // Must not block; runs on every I/O thread at once, so it must be
  // thread-safe. Empty = every request passes.
  std::function<std::optional<HttpReply>(const HttpRequest&)> head_hook;
  // Formats the body of every response the transport sends itself (400,
  // 404, 405, 408, 413, 417, 431, 500, 503, 505). Called from the I/O
  // threads and from whichever thread drops an unanswered response: it must
  // be thread-safe (a pure function). Empty = a plain-text
  // "<status> <reason>: <message>" body.
  std::function<HttpReply(const HttpError&)> error_formatter;
};

// Counters since start(); a snapshot, read without stopping the server.
struct HttpServerStats {
  int64_t num_open_connections = 0;
  int64_t num_accepted = 0;
  int64_t num_refused = 0;           // past max_connections
  int64_t num_requests = 0;          // handed to a handler
  int64_t num_active_requests = 0;   // handed to a handler, response not complete
  int64_t num_transport_errors = 0;  // answered by the transport (4xx/5xx above)
  int64_t num_timeouts = 0;          // header, body, idle and write timeouts
  int64_t num_disconnects = 0;       // requests whose client went away before completion
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
};

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, Router router);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Resolves host and binds and listens (SO_REUSEADDR, so TIME_WAIT does
  // not block a restart; a port with a live listener still fails). Error:
  // "http: cannot listen on HOST:PORT: <reason>".
  Status bind();
  // The bound port (after bind()).
  uint16_t port() const;
  // Starts the I/O threads and accepting. After bind().
  Status start();
  // Drain: closes the listening socket (new connections are refused by the
  // kernel), closes idle keep-alive connections, and lets in-flight
  // requests finish; each then gets Connection: close.
  void stop_accepting();
  // Closes every connection (handlers of unfinished requests see a
  // disconnect), stops and joins the I/O threads, then the worker threads
  // (queued worker handlers are dropped; running ones are waited for).
  // Returns within about two seconds unless a handler blocks.
  void stop();

  HttpServerStats stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Raises this process's RLIMIT_NOFILE soft limit to at least `wanted`
// (capped by the hard limit). Returns the soft limit now in force; an
// error if even that is below `wanted`. For main() (process-wide).
Result<uint64_t> raise_open_file_limit(uint64_t wanted);

}  // namespace strata::http
