#include "engine/stop_string_matcher.h"

#include <algorithm>
#include <utility>

namespace strata {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop_strings, bool include_stop)
    : include_stop_(include_stop) {
  for (std::string& s : stop_strings) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

size_t StopStringMatcher::held_suffix_length() const {
  size_t best = 0;
  for (const std::string& s : stops_) {
    const size_t max_len = std::min(s.size() - 1, pending_.size());
    for (size_t k = max_len; k > best; --k) {
      if (std::string_view(pending_).substr(pending_.size() - k) ==
          std::string_view(s).substr(0, k)) {
        best = k;
        break;
      }
    }
  }
  return best;
}

std::string StopStringMatcher::feed(std::string_view delta, bool can_match) {
  if (is_stopped_) return "";
  pending_.append(delta);
  if (!can_match || stops_.empty()) return std::exchange(pending_, std::string());
  // A match can only start inside pending_: anything emitted earlier was not
  // a prefix of any stop string together with the text that followed it.
  size_t first_match = std::string::npos;
  const std::string* match = nullptr;
  for (const std::string& s : stops_) {
    const size_t at = pending_.find(s);
    if (at < first_match) {
      first_match = at;
      match = &s;
    }
  }
  if (match != nullptr) {
    is_stopped_ = true;
    matched_ = *match;
    std::string out = pending_.substr(0, first_match + (include_stop_ ? match->size() : 0));
    pending_.clear();
    return out;
  }
  const size_t emit = pending_.size() - held_suffix_length();
  std::string out = pending_.substr(0, emit);
  pending_.erase(0, emit);
  return out;
}

std::string StopStringMatcher::finish() {
  if (is_stopped_) return "";
  return std::exchange(pending_, std::string());
}

}  // namespace strata
