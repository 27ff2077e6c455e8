// SseParser: incremental parser of a text/event-stream body (the WHATWG
// server-sent-events format). Bytes arrive in arbitrary pieces (a network
// read may split a line or hold several events); feed() buffers partial
// lines and returns every event completed by this piece. Lines end in \n,
// \r\n or \r; "data:" lines of one event are joined with \n; comment lines
// (":...") and other fields (event:, id:, retry:) are ignored; an event is
// dispatched at a blank line and only if it carried data.
// The OpenAI terminator "data: [DONE]" is an ordinary event here; callers
// check is_done_marker(). Not thread-safe: one parser per stream.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace strata::loadgen {

class SseParser {
 public:
  // Appends `bytes` and returns the data of each event it completes.
  std::vector<std::string> feed(std::string_view bytes);

  // Data of an event left without its closing blank line when the stream
  // ended (a lenient end: some servers omit the last blank line); empty if
  // none. Resets the parser.
  std::string finish();

  static bool is_done_marker(std::string_view data) { return data == "[DONE]"; }

 private:
  void take_line(std::string_view line, std::vector<std::string>* events);

  std::string pending_;  // bytes of an unfinished line
  std::string data_;     // data of the event being built
  bool has_data_ = false;
  bool last_was_cr_ = false;  // a \r ended the previous piece: skip a leading \n
};

}  // namespace strata::loadgen
