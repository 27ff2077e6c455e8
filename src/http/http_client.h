// HttpClient: an asynchronous HTTP/1.1 client for upstream calls (the
// router's side towards its replicas), on Boost.Asio with Boost.Beast's
// response parser.
//
// - Keep-alive connections are pooled per host:port and reused (LIFO); a
//   pooled connection idle longer than pool_idle_timeout, or found closed by
//   the peer (checked without blocking before reuse), is dropped. A call
//   that fails on a reused connection before any response byte arrived is
//   retried once on a fresh one (the server closed it while idle).
// - Response bodies are delivered as they arrive (on_data), de-chunked:
//   an SSE stream passes through event by event.
// - Timeouts: connect, response (request written -> response head
//   complete) and read (the longest silence inside a body).
// - cancel() closes the upstream connection at once (it is never reused),
//   so a replica sees the disconnect and aborts its work.
//
// One I/O thread, owned by the client; callbacks run on it and must not
// block. start(), fetch() and ClientCall::cancel() are thread-safe. Every
// call's on_complete runs exactly once, also when the client is destroyed
// first (kCancelled). A ClientCall handle may outlive the client.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "http/http_request.h"

namespace strata::http {

namespace detail {
class ClientCore;
}  // namespace detail

struct HttpClientOptions {
  std::chrono::milliseconds connect_timeout{5000};
  // From the request's first byte written to the end of the response head.
  // A non-streaming generation sends its head only when done: keep it long.
  std::chrono::milliseconds response_timeout{300000};
  // The longest silence between two reads of a response body.
  std::chrono::milliseconds read_timeout{300000};
  // Pooled connections idle longer than this are dropped; keep it below the
  // server's idle timeout (strata's HttpServer: 5 s).
  std::chrono::milliseconds pool_idle_timeout{4000};
  // Idle connections kept per host:port.
  size_t max_idle_per_host = 64;
  size_t max_response_header_bytes = size_t{64} << 10;
  // fetch() only: bodies are buffered up to this.
  uint64_t max_buffered_body_bytes = uint64_t{64} << 20;
};

struct ClientRequest {
  std::string host;  // name or address literal
  uint16_t port = 80;
  std::string method = "GET";
  std::string target = "/";  // origin-form
  // Extra headers. Host, Content-Length, Transfer-Encoding and Connection
  // are the client's; names must be tokens and values free of control bytes.
  HeaderList headers;
  std::string body;  // sent with Content-Length (also 0 for POST/PUT/PATCH)
  // Overrides HttpClientOptions::response_timeout for this call (a probe
  // that must answer quickly).
  std::optional<std::chrono::milliseconds> response_timeout;
};

struct ClientResponseHead {
  int status = 0;
  HeaderList headers;
  std::optional<std::string_view> header(std::string_view name) const {
    return find_header(headers, name);
  }
};

enum class ClientError {
  kNone,
  kInvalidRequest,  // the request itself is malformed (bad header)
  kConnect,         // resolving or connecting failed
  kTimeout,         // connect, response or read timeout
  kCancelled,       // cancel() or the client's destruction
  kProtocol,        // the response is not valid HTTP/1.1 (or too large for fetch())
  kClosed,          // the connection closed or reset before the response ended
};
std::string_view client_error_name(ClientError e);

struct ClientOutcome {
  ClientError error = ClientError::kNone;
  std::string message;  // one line, empty when ok
  bool ok() const { return error == ClientError::kNone; }
};

struct ClientCallbacks {
  // Once, when the response head is complete (skipped if the call fails first).
  std::function<void(const ClientResponseHead&)> on_head;
  // Body bytes, de-chunked, as they arrive. Returning false cancels the
  // call (on_complete then gets kCancelled).
  std::function<bool(std::string_view)> on_data;
  // Exactly once: the response ended, or the call failed.
  std::function<void(const ClientOutcome&)> on_complete;
};

// A call in flight. Thread-safe; cancel() is idempotent and does nothing
// once the call completed.
class ClientCall {
 public:
  virtual ~ClientCall() = default;
  virtual void cancel() = 0;
};

struct ClientResponse {
  ClientResponseHead head;
  std::string body;
};
struct ClientResult {
  ClientOutcome outcome;
  ClientResponse response;  // when outcome.ok()
};

struct HttpClientStats {
  int64_t num_connects = 0;  // connections opened
  int64_t num_reuses = 0;    // calls served by a pooled connection
  int64_t num_retries = 0;   // stale pooled connections retried
  int64_t num_idle = 0;      // pooled connections now
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options = {});
  // Cancels every call in flight (their on_complete runs with kCancelled)
  // and joins the I/O thread. Must not run on that thread (a callback).
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  std::shared_ptr<ClientCall> start(ClientRequest request, ClientCallbacks callbacks);
  // The whole response, buffered (up to max_buffered_body_bytes).
  std::future<ClientResult> fetch(ClientRequest request);

  HttpClientStats stats() const;

 private:
  std::unique_ptr<detail::ClientCore> impl_;
};

}  // namespace strata::http
