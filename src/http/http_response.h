// HttpResponse: the handle through which a handler answers one request,
// now or later, from any thread.
//
// The server creates one per request and hands it to the handler as a
// ResponsePtr (std::shared_ptr). Copies may travel to other threads (the
// engine thread that produces tokens, a worker pool); every method is
// thread-safe, and bytes are handed to the connection's I/O thread, which
// writes them in call order. Two ways to answer, once:
//   send(...)                       a complete response (Content-Length)
//   start_stream(...) / start_sse() a streamed one (chunked in HTTP/1.1,
//   then write(...)...              close-delimited in HTTP/1.0)
//   then finish()
// Methods return false when the call had no effect: the client is gone,
// the response was already answered or finished, or (write) the bounded
// write queue would overflow, which closes the connection (see
// HttpServerOptions::max_write_queue_bytes and write_timeout).
//
// Disconnect: when the client closes or resets the connection before the
// handler has answered in full (send(), or finish() of a stream; streaming
// or not: the server keeps reading while the handler runs), when a stalled
// reader times out, or when the server stops, is_disconnected() turns true
// and the callbacks registered with on_disconnect() run once, on the
// connection's I/O thread. Use them to
// abort the work behind the request; they must not block. A callback
// registered after the fact runs at once, on the caller's thread. The
// callbacks are dropped (never run) once the response completes.
//
// When the last handle goes away unanswered, the server answers 500 (via
// its error formatter); a stream left unfinished has its connection closed
// without the terminating chunk, so the client sees a truncated body.
//
// HEAD requests: the handler answers as for GET; only headers are sent.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "http/http_request.h"

namespace strata::http {

namespace detail {
class ResponseChannel;
}  // namespace detail

class HttpResponse {
 public:
  explicit HttpResponse(std::shared_ptr<detail::ResponseChannel> channel);
  ~HttpResponse();
  HttpResponse(const HttpResponse&) = delete;
  HttpResponse& operator=(const HttpResponse&) = delete;

  // A complete response. `headers` are extra fields; names must be tokens,
  // values free of CR, LF and other control bytes, and none of
  // Content-Length, Transfer-Encoding, Connection (the server owns those):
  // otherwise the client gets a 500 instead and this returns false.
  bool send(int status, std::string_view content_type, std::string body,
            const HeaderList& headers = {});
  bool send(HttpReply reply);

  // Starts a streamed response: the status line and headers are queued at
  // once, the body follows in write() calls until finish().
  bool start_stream(int status, std::string_view content_type, const HeaderList& headers = {});
  // start_stream(200, "text/event-stream") with Cache-Control: no-cache and
  // X-Accel-Buffering: no (so proxies do not hold frames back).
  bool start_sse(const HeaderList& headers = {});
  // Queues `data` as the next piece of the body (one chunk); empty data is
  // a no-op. For SSE, `data` is one or more whole frames (see sse_event()).
  bool write(std::string_view data);
  // Ends a streamed response.
  bool finish();

  void on_disconnect(std::function<void()> callback);
  bool is_disconnected() const;
  // Bytes accepted but not yet written to the socket (a slow reader's backlog).
  size_t queued_bytes() const;

 private:
  std::shared_ptr<detail::ResponseChannel> channel_;
};

// One SSE event carrying `data`: "data: <line>\n" per line of it, then an
// empty line ("data: {...}\n\n"). A CR, LF or CRLF in `data` starts a new
// data line, so a payload can never end the event early.
std::string sse_event(std::string_view data);

}  // namespace strata::http
