// PCRE2-backed Isolated split.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex_splitter.h"

#include <pcre2.h>

#include <algorithm>

#include "tokenizer/unicode_text.h"

namespace strata {
namespace {

pcre2_code* as_code(void* p) {
  return static_cast<pcre2_code*>(p);
}

struct MatchData {
  explicit MatchData(const pcre2_code* code)
      : data(pcre2_match_data_create_from_pattern(code, nullptr)) {}
  ~MatchData() { pcre2_match_data_free(data); }
  pcre2_match_data* data;
};

}  // namespace

std::optional<SplitBehavior> split_behavior_from_name(std::string_view name) {
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return std::nullopt;
}

Result<RegexSplitter> RegexSplitter::compile(const std::string& pattern, SplitBehavior behavior,
                                             bool invert) {
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return invalid_argument("tokenizer: pre-tokenizer regex does not compile at offset " +
                            std::to_string(err_offset) + ": " + reinterpret_cast<const char*>(msg) +
                            " (pattern " + pattern + ")");
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: falls back to the interpreter
  RegexSplitter s;
  s.pattern_ = pattern;
  s.behavior_ = behavior;
  s.invert_ = invert;
  s.code_ = code;
  return s;
}

RegexSplitter::RegexSplitter(RegexSplitter&& o) noexcept
    : pattern_(std::move(o.pattern_)), behavior_(o.behavior_), invert_(o.invert_), code_(o.code_) {
  o.code_ = nullptr;
}

RegexSplitter& RegexSplitter::operator=(RegexSplitter&& o) noexcept {
  if (this != &o) {
    if (code_) pcre2_code_free(as_code(code_));
    pattern_ = std::move(o.pattern_);
    behavior_ = o.behavior_;
    invert_ = o.invert_;
    code_ = o.code_;
    o.code_ = nullptr;
  }
  return *this;
}

RegexSplitter::~RegexSplitter() {
  if (code_) pcre2_code_free(as_code(code_));
}

Status RegexSplitter::split(std::string_view text, std::vector<std::string_view>* pieces) const {
  MatchData md(as_code(code_));
  if (md.data == nullptr) return internal_error("tokenizer: out of memory for regex match data");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  // Alternating gaps and matches: [begin, end) and whether it is a match
  // (after `invert`).
  struct Segment {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Segment> segments;
  auto add = [&](size_t begin, size_t end, bool is_match) {
    segments.push_back({begin, end, is_match != invert_});
  };
  size_t gap_start = 0;
  size_t offset = 0;
  while (offset < text.size()) {
    // The UTF-8 check scans the whole subject: once is enough.
    const uint32_t options = offset == 0 ? 0 : PCRE2_NO_UTF_CHECK;
    const int rc =
        pcre2_match(as_code(code_), subject, text.size(), offset, options, md.data, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof(msg));
      return invalid_argument(std::string("tokenizer: regex match failed: ") +
                              reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.data);
    const size_t begin = ov[0], end = ov[1];
    if (end == begin) {  // empty match: never a piece; step one code point
      if (begin >= text.size()) break;
      offset = begin + unicode::utf8_char_bytes(static_cast<uint8_t>(text[begin]));
      continue;
    }
    if (begin > gap_start) add(gap_start, begin, false);
    add(begin, end, true);
    gap_start = offset = end;
  }
  if (gap_start < text.size()) add(gap_start, text.size(), false);

  // tokenizers' NormalizedString::split, behavior by behavior.
  std::vector<Segment> out;
  out.reserve(segments.size());
  switch (behavior_) {
    case SplitBehavior::kIsolated:
      out = std::move(segments);
      break;
    case SplitBehavior::kRemoved:
      for (const Segment& s : segments) {
        if (!s.is_match) out.push_back(s);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Segment& s : segments) {
        if (s.is_match && !previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->is_match && !previous_match && !out.empty()) {
          out.back().begin = it->begin;
        } else {
          out.push_back(*it);
        }
        previous_match = it->is_match;
      }
      std::reverse(out.begin(), out.end());
      break;
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Segment& s : segments) {
        if (s.is_match == previous_match && !out.empty()) {
          out.back().end = s.end;
        } else {
          out.push_back(s);
        }
        previous_match = s.is_match;
      }
      break;
    }
  }
  for (const Segment& s : out) {
    if (s.end > s.begin) pieces->push_back(text.substr(s.begin, s.end - s.begin));
  }
  return Status::ok();
}

}  // namespace strata
