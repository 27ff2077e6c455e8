// SseFrameBuffer: cuts a server-sent-events byte stream, as it arrives in
// arbitrary pieces, into whole events (each ending with a blank line: LF LF
// or CR LF CR LF). The router passes a replica's stream through event by
// event, so a replica that dies mid-stream never leaves half an event at the
// client before the router's own error event.
// A plain value; not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace strata::router {

class SseFrameBuffer {
 public:
  void append(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole event, its terminating blank line included.
  std::optional<std::string> next();
  // Bytes of an unfinished event.
  size_t num_pending_bytes() const { return buffer_.size() - begin_; }

 private:
  std::string buffer_;
  size_t begin_ = 0;
};

}  // namespace strata::router
