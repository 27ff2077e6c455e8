#include "http/chunked_decoder.h"

#include <algorithm>

#include "http/http_chars.h"

namespace strata::http {
namespace {

constexpr int kMaxSizeDigits = 16;
constexpr size_t kMaxExtensionBytes = 1024;

int hex_digit(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

ChunkedDecoder::State ChunkedDecoder::fail(int status, std::string_view message) {
  error_ = HttpError{status, message};
  state_ = State::kError;
  return state_;
}

ChunkedDecoder::State ChunkedDecoder::feed(std::string_view in, size_t* consumed,
                                           std::string* body) {
  size_t i = 0;
  *consumed = 0;
  if (state_ != State::kNeedMore) return state_;
  while (i < in.size()) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    switch (step_) {
      case Step::kSize: {
        const int d = hex_digit(c);
        if (d >= 0) {
          if (++num_size_digits_ > kMaxSizeDigits) return fail(400, "invalid chunk size");
          chunk_size_ = chunk_size_ * 16 + static_cast<uint64_t>(d);
          ++i;
          break;
        }
        if (num_size_digits_ == 0) return fail(400, "invalid chunk size");
        if (c == ';') {
          step_ = Step::kExtension;
          ++i;
          break;
        }
        if (c != '\r') return fail(400, "invalid chunk size");
        // The whole size is known: refuse it before reading its data.
        if (chunk_size_ > max_body_bytes_ - std::min<uint64_t>(body->size(), max_body_bytes_)) {
          return fail(413, "request body too large");
        }
        step_ = Step::kSizeLf;
        ++i;
        break;
      }
      case Step::kExtension:
        if (c == '\r') {
          if (chunk_size_ > max_body_bytes_ - std::min<uint64_t>(body->size(), max_body_bytes_)) {
            return fail(413, "request body too large");
          }
          step_ = Step::kSizeLf;
        } else if (c == '\n' || is_control(c)) {
          return fail(400, "invalid chunk extension");
        } else if (++extension_bytes_ > kMaxExtensionBytes) {
          return fail(400, "chunk extension too long");
        }
        ++i;
        break;
      case Step::kSizeLf:
        if (c != '\n') return fail(400, "invalid chunk size line");
        ++i;
        if (chunk_size_ == 0) {
          step_ = Step::kTrailer;
        } else {
          remaining_ = chunk_size_;
          step_ = Step::kData;
        }
        break;
      case Step::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - i));
        body->append(in.data() + i, n);
        i += n;
        remaining_ -= n;
        if (remaining_ == 0) step_ = Step::kDataCr;
        break;
      }
      case Step::kDataCr:
        if (c != '\r') return fail(400, "chunk data not followed by CRLF");
        step_ = Step::kDataLf;
        ++i;
        break;
      case Step::kDataLf:
        if (c != '\n') return fail(400, "chunk data not followed by CRLF");
        step_ = Step::kSize;
        chunk_size_ = 0;
        num_size_digits_ = 0;
        extension_bytes_ = 0;
        ++i;
        break;
      case Step::kTrailer:
        if (c == '\r') {
          step_ = Step::kFinalLf;
          ++i;
          break;
        }
        if (c == ' ' || c == '\t') return fail(400, "obsolete line folding in trailer");
        step_ = Step::kTrailerLine;
        break;  // the byte is checked as part of the line
      case Step::kTrailerLine:
        if (++trailer_bytes_ > max_trailer_bytes_) return fail(400, "trailer section too large");
        if (c == '\r') {
          step_ = Step::kTrailerLf;
        } else if (c == '\n' || is_control(c)) {
          return fail(400, "control character in trailer");
        }
        ++i;
        break;
      case Step::kTrailerLf:
        if (c != '\n') return fail(400, "bare CR in trailer");
        step_ = Step::kTrailer;
        ++i;
        break;
      case Step::kFinalLf:
        if (c != '\n') return fail(400, "bare CR in trailer");
        ++i;
        *consumed = i;
        state_ = State::kDone;
        return state_;
    }
  }
  *consumed = i;
  return state_;
}

}  // namespace strata::http
