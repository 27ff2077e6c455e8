// ChunkedDecoder: an incremental decoder of a chunked request body
// (RFC 9112 7.1), strict about its framing.
//
// Bytes go in as they arrive; chunk data is appended to the body and the
// framing is consumed. Errors, reported as soon as the offending byte or
// chunk-size line arrives:
//   400  a chunk size that is empty, not hex, longer than 16 digits or
//        followed by anything but ";ext" or CRLF; a chunk extension over
//        1 KiB; chunk data not followed by CRLF; a bare CR or LF, a control
//        byte or obsolete folding in the trailer section, or a trailer
//        section over its limit
//   413  a chunk whose size would take the body past max_body_bytes (seen
//        on its size line, before its data is read)
// Trailer fields are checked and dropped.
//
// Not thread-safe; one decoder per request.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/http_error.h"

namespace strata::http {

class ChunkedDecoder {
 public:
  enum class State { kNeedMore, kDone, kError };

  ChunkedDecoder(uint64_t max_body_bytes, size_t max_trailer_bytes)
      : max_body_bytes_(max_body_bytes), max_trailer_bytes_(max_trailer_bytes) {}

  // Consumes a prefix of `in` (its length goes to *consumed), appending
  // chunk data to *body. kDone once the last chunk and the trailer section
  // ended: bytes after them (a pipelined request) are not consumed.
  State feed(std::string_view in, size_t* consumed, std::string* body);

  const HttpError& error() const { return error_; }

 private:
  enum class Step {
    kSize,         // hex digits of chunk-size
    kExtension,    // after ';' up to CR
    kSizeLf,       // LF after chunk-size line's CR
    kData,         // chunk data
    kDataCr,       // CR after data
    kDataLf,       // LF after data
    kTrailer,      // a trailer line (or the final empty line) begins
    kTrailerLine,  // inside a trailer line
    kTrailerLf,    // LF after a trailer line's CR
    kFinalLf,      // LF after the final empty line's CR
  };
  State fail(int status, std::string_view message);

  const uint64_t max_body_bytes_;
  const size_t max_trailer_bytes_;
  Step step_ = Step::kSize;
  State state_ = State::kNeedMore;
  uint64_t chunk_size_ = 0;
  int num_size_digits_ = 0;
  size_t extension_bytes_ = 0;
  uint64_t remaining_ = 0;
  size_t trailer_bytes_ = 0;
  HttpError error_;
};

}  // namespace strata::http
