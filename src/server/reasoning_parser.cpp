#include "server/reasoning_parser.h"

#include <algorithm>

namespace strata::server {
namespace {

constexpr std::string_view kStart = "<think>";
constexpr std::string_view kEnd = "</think>";

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

std::optional<ReasoningParserKind> reasoning_parser_from_name(std::string_view name) {
  if (name.empty()) return ReasoningParserKind::kNone;
  if (name == "deepseek_r1") return ReasoningParserKind::kDeepSeekR1;
  if (name == "qwen3") return ReasoningParserKind::kQwen3;
  return std::nullopt;
}

const char* reasoning_parser_name(ReasoningParserKind kind) {
  switch (kind) {
    case ReasoningParserKind::kNone:
      return "none";
    case ReasoningParserKind::kDeepSeekR1:
      return "deepseek_r1";
    case ReasoningParserKind::kQwen3:
      return "qwen3";
  }
  return "none";
}

ReasoningParser::ReasoningParser(ReasoningParserKind kind, bool thinking_disabled) {
  is_active_ = kind == ReasoningParserKind::kDeepSeekR1 ||
               (kind == ReasoningParserKind::kQwen3 && !thinking_disabled);
  in_reasoning_ = is_active_;
}

void ReasoningParser::drain(ReasoningDelta* out) {
  while (in_reasoning_) {
    const size_t end = pending_.find(kEnd);
    const size_t start = saw_start_ ? std::string::npos : pending_.find(kStart);
    if (start != std::string::npos && (end == std::string::npos || start < end)) {
      out->reasoning.append(pending_, 0, start);
      pending_.erase(0, start + kStart.size());
      saw_start_ = true;
      continue;
    }
    if (end != std::string::npos) {
      out->reasoning.append(pending_, 0, end);
      out->content.append(pending_, end + kEnd.size());
      pending_.clear();
      in_reasoning_ = false;
      return;
    }
    size_t hold = partial_tag_suffix(pending_, kEnd);
    if (!saw_start_) hold = std::max(hold, partial_tag_suffix(pending_, kStart));
    out->reasoning.append(pending_, 0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return;
  }
}

ReasoningDelta ReasoningParser::push(std::string_view text) {
  ReasoningDelta out;
  if (!in_reasoning_) {
    out.content.assign(text);
    return out;
  }
  pending_.append(text);
  drain(&out);
  return out;
}

ReasoningDelta ReasoningParser::finish() {
  ReasoningDelta out;
  if (in_reasoning_) out.reasoning = std::move(pending_);
  pending_.clear();
  return out;
}

ReasoningSplit ReasoningParser::split(ReasoningParserKind kind, bool thinking_disabled,
                                      std::string_view text) {
  ReasoningParser p(kind, thinking_disabled);
  ReasoningSplit out;
  if (!p.is_active()) {
    out.content = std::string(text);
    return out;
  }
  ReasoningDelta d = p.push(text);
  ReasoningDelta tail = p.finish();
  d.reasoning += tail.reasoning;
  out.reasoning = std::move(d.reasoning);
  if (!d.content.empty()) out.content = std::move(d.content);
  return out;
}

}  // namespace strata::server
