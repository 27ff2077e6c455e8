#include "loadgen/sse_parser.h"

namespace strata::loadgen {

std::vector<std::string> SseParser::feed(std::string_view bytes) {
  std::vector<std::string> events;
  size_t i = 0;
  if (last_was_cr_ && !bytes.empty() && bytes[0] == '\n') i = 1;
  last_was_cr_ = false;
  while (i < bytes.size()) {
    const size_t eol = bytes.find_first_of("\r\n", i);
    if (eol == std::string_view::npos) {
      pending_.append(bytes.substr(i));
      break;
    }
    pending_.append(bytes.substr(i, eol - i));
    take_line(pending_, &events);
    pending_.clear();
    i = eol + 1;
    if (bytes[eol] == '\r') {
      if (i < bytes.size()) {
        if (bytes[i] == '\n') ++i;
      } else {
        last_was_cr_ = true;
      }
    }
  }
  return events;
}

std::string SseParser::finish() {
  std::vector<std::string> events;
  if (!pending_.empty()) take_line(pending_, &events);
  std::string out = has_data_ ? data_ : std::string();
  pending_.clear();
  data_.clear();
  has_data_ = false;
  last_was_cr_ = false;
  return out;
}

void SseParser::take_line(std::string_view line, std::vector<std::string>* events) {
  if (line.empty()) {
    if (has_data_) events->push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line[0] == ':') return;  // comment
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  if (field != "data") return;
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  if (has_data_) data_ += '\n';
  data_.append(value);
  has_data_ = true;
}

}  // namespace strata::loadgen
