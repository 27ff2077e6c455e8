// RawClient: a blocking TCP client for protocol tests. It sends exactly the
// bytes it is given and reads responses byte for byte, so the tests see what
// the server wrote, not what an HTTP library makes of it. Timeouts are hang
// detectors only. Not thread-safe; one per connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_request.h"

namespace strata::http::testing {

struct RawResponse {
  int status = 0;
  std::string head;  // status line and headers, as received
  HeaderList headers;
  std::string body;  // de-chunked
  bool is_chunked = false;
  std::vector<std::string> chunks;  // chunk payloads, in order (chunked only)
  bool is_close_delimited = false;  // neither length nor chunked: body ran to EOF

  std::optional<std::string_view> header(std::string_view name) const {
    return find_header(headers, name);
  }
};

class RawClient {
 public:
  using Ms = std::chrono::milliseconds;

  // Connects to 127.0.0.1:port; is_connected() tells whether it worked.
  explicit RawClient(uint16_t port);
  ~RawClient();
  RawClient(RawClient&& other) noexcept;
  RawClient& operator=(RawClient&&) = delete;
  RawClient(const RawClient&) = delete;

  bool is_connected() const { return fd_ >= 0; }
  int fd() const { return fd_; }

  bool send_all(std::string_view bytes);
  // Sends what the socket takes within `timeout` without waiting for the
  // peer to read more; returns the bytes sent.
  size_t send_some(std::string_view bytes, Ms timeout);

  // Reads one response (after any earlier one). `is_head`: the request was
  // HEAD (no body follows whatever the headers say). nullopt when the
  // connection closed or `timeout` passed before a complete response.
  std::optional<RawResponse> read_response(Ms timeout = Ms(5000), bool is_head = false);
  // Reads the status line and headers only (a streaming response); the
  // body is then read with read_chunk().
  std::optional<RawResponse> read_head(Ms timeout = Ms(5000));
  // The next chunk's payload of a chunked body; empty string for the last
  // chunk; nullopt on timeout or close.
  std::optional<std::string> read_chunk(Ms timeout = Ms(5000));
  // True when the server closes (EOF or reset) within `timeout`; any bytes
  // that arrive first are kept in received_after_close().
  bool wait_closed(Ms timeout = Ms(5000));
  const std::string& received_after_close() const { return buffered_; }
  // The connection closes or gets at least one byte within `timeout`.
  bool has_activity(Ms timeout);

  void shutdown_write();
  // Closes with SO_LINGER 0: the server sees a reset.
  void reset();
  void close();

 private:
  // Reads more into buffered_; false on EOF, error or timeout.
  bool fill(std::chrono::steady_clock::time_point deadline);
  std::optional<std::string> take_line(std::chrono::steady_clock::time_point deadline);
  bool take_bytes(size_t n, std::chrono::steady_clock::time_point deadline, std::string* out);

  int fd_ = -1;
  std::string buffered_;
  bool is_eof_ = false;
};

// One request with a connection of its own; nullopt when it failed.
std::optional<RawResponse> one_shot(uint16_t port, std::string_view request,
                                    RawClient::Ms timeout = RawClient::Ms(5000));

// This process's resident set in KiB (from /proc/self/status).
int64_t rss_kib();

}  // namespace strata::http::testing
