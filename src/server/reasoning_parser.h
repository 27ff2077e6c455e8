// ReasoningParser: splits a reasoning model's generated text into
// `reasoning_content` and `content`, as vLLM's --reasoning-parser does for
// models that think between <think> and </think> (Qwen3, QwQ, DeepSeek R1).
//
//   deepseek_r1  everything before </think> is reasoning, everything after
//                it content; a <think> the model writes itself (the template
//                usually opens the block in the prompt) is dropped. No
//                </think> at all: the whole output is reasoning (the model
//                was cut off while thinking), content null.
//   qwen3        the same, except that a request with chat_template_kwargs
//                {"enable_thinking": false} (the template then closes the
//                think block in the prompt) is all content.
//
// Streaming and non-streaming give the same split: split() is push() of the
// whole text then finish(). push() holds back a tail that may be the start
// of a tag (e.g. "</thi") until the next piece decides it, so a tag split
// across deltas is never emitted as text. Tags are matched as text, so the
// split holds whether the tag is one token or several.
//
// One difference from vLLM, on purpose: text before a <think> written
// mid-output stays reasoning (vLLM's non-streaming path drops it, its
// streaming path keeps it); models write <think> first, where both agree.
//
// A plain value per choice; not thread-safe (one pump thread uses it).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace strata::server {

enum class ReasoningParserKind { kNone, kDeepSeekR1, kQwen3 };

// "deepseek_r1", "qwen3" (vLLM's names); "" is kNone; anything else nullopt.
std::optional<ReasoningParserKind> reasoning_parser_from_name(std::string_view name);
const char* reasoning_parser_name(ReasoningParserKind kind);

// What one piece of output adds to each field (either may be empty).
struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

// The whole output's fields; nullopt is JSON null, as vLLM answers.
struct ReasoningSplit {
  std::optional<std::string> reasoning;
  std::optional<std::string> content;
};

class ReasoningParser {
 public:
  // thinking_disabled: the request set enable_thinking false (qwen3 only).
  ReasoningParser(ReasoningParserKind kind, bool thinking_disabled);

  // Whether the parser splits at all (kNone, or qwen3 with thinking off,
  // pass everything through as content).
  bool is_active() const { return is_active_; }

  ReasoningDelta push(std::string_view text);
  // End of output: releases the held-back tail.
  ReasoningDelta finish();

  // The non-streaming answer for the whole `text`.
  static ReasoningSplit split(ReasoningParserKind kind, bool thinking_disabled,
                              std::string_view text);

 private:
  // Moves what is decided from pending_ into `out`.
  void drain(ReasoningDelta* out);

  bool is_active_ = false;
  bool in_reasoning_ = false;
  bool saw_start_ = false;  // a <think> was dropped (only the first one is)
  std::string pending_;     // reasoning text that may begin a tag
};

}  // namespace strata::server
