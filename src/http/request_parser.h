// RequestHeadParser: a strict, incremental parser of one HTTP/1.x request
// head (request line + header fields + the empty line), applying RFC 9112
// the way nginx and h2o do for untrusted clients.
//
// Feed it every byte received for the request so far; it scans only the new
// bytes, so a client dripping its head byte by byte costs O(head) in total.
// Defects are reported as soon as the offending byte arrives, before any
// body is read:
//   400  bare CR or LF, a control byte (NUL, DEL, ...) anywhere in the head,
//        obsolete line folding, a malformed request line or field line,
//        duplicate or non-numeric Content-Length, Content-Length together
//        with Transfer-Encoding, any Transfer-Encoding but exactly
//        "chunked" (or any with HTTP/1.0), an HTTP/1.1 request without
//        exactly one Host, a target that is neither origin-form ("/p?q")
//        nor absolute-form ("http://h/p")
//   417  an Expect other than "100-continue"
//   431  more than max_headers field lines, or a head over max_header_bytes
//   505  an HTTP version other than 1.0 and 1.1
// Empty lines before the request line are skipped (RFC 9112 2.2).
//
// Not thread-safe; one parser per connection, reset() between requests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "http/http_error.h"
#include "http/http_request.h"

namespace strata::http {

struct ParserLimits {
  // Bytes of the head including its final empty line (nginx:
  // large_client_header_buffers is 4 x 8 KiB).
  size_t max_header_bytes = size_t{16} << 10;
  // Header field lines (h2o: 100).
  size_t max_headers = 100;
};

// How the request's body is delimited.
enum class BodyFraming { kNone, kLength, kChunked };

struct RequestHead {
  BodyFraming framing = BodyFraming::kNone;
  uint64_t content_length = 0;  // when framing == kLength
  bool expects_continue = false;
};

class RequestHeadParser {
 public:
  enum class State { kNeedMore, kDone, kError };

  explicit RequestHeadParser(ParserLimits limits = {}) : limits_(limits) {}

  // `data` starts at the request's first byte (or leading empty lines) and
  // holds everything received since; it may extend past the head (a body,
  // pipelined requests). On kDone, head_bytes() bytes of it form the head,
  // `request` holds method, target, path, query, version, headers and
  // keep_alive, and head() tells the body framing. On kError see error().
  State feed(std::string_view data, HttpRequest* request);

  size_t head_bytes() const { return head_bytes_; }
  const RequestHead& head() const { return head_; }
  const HttpError& error() const { return error_; }
  // Whether any byte of a request (beyond leading empty lines) arrived.
  bool has_started() const { return has_started_; }

  void reset() { *this = RequestHeadParser(limits_); }

 private:
  State fail(int status, std::string_view message);
  State parse_head(std::string_view head, HttpRequest* request);
  State parse_request_line(std::string_view line, HttpRequest* request);
  State parse_target(HttpRequest* request);
  State parse_field(std::string_view line, HttpRequest* request);

  ParserLimits limits_;
  size_t scanned_ = 0;     // bytes of `data` already scanned
  size_t head_start_ = 0;  // first byte after leading empty lines
  size_t line_start_ = 0;
  size_t num_lines_ = 0;  // complete non-empty lines so far
  bool has_started_ = false;
  size_t head_bytes_ = 0;
  RequestHead head_;
  HttpError error_;
  State state_ = State::kNeedMore;
  // Field bookkeeping while parsing.
  int num_host_ = 0;
  bool has_transfer_encoding_ = false;
  bool has_connection_close_ = false;
  bool has_connection_keep_alive_ = false;
};

// RFC 9110 tchar.
bool is_token_char(unsigned char c);

}  // namespace strata::http
