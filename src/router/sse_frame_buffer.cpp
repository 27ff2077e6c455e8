#include "router/sse_frame_buffer.h"

namespace strata::router {

std::optional<std::string> SseFrameBuffer::next() {
  const std::string_view rest = std::string_view(buffer_).substr(begin_);
  const size_t lf = rest.find("\n\n");
  const size_t crlf = rest.find("\r\n\r\n");
  size_t end = std::string_view::npos;
  if (lf != std::string_view::npos) end = lf + 2;
  if (crlf != std::string_view::npos && (end == std::string_view::npos || crlf + 4 < end)) {
    end = crlf + 4;
  }
  if (end == std::string_view::npos) {
    // Compact once the consumed part dominates, so a long stream stays small.
    if (begin_ > 0 && begin_ >= buffer_.size() / 2) {
      buffer_.erase(0, begin_);
      begin_ = 0;
    }
    return std::nullopt;
  }
  std::string event(rest.substr(0, end));
  begin_ += end;
  if (begin_ == buffer_.size()) {
    buffer_.clear();
    begin_ = 0;
  }
  return event;
}

}  // namespace strata::router
