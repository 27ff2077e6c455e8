// OpenAI response pieces: usage, logprobs in the completions and chat
// shapes, finish reasons and SSE framing, as nlohmann::json values. Pure
// functions of their inputs; token text comes from a caller-supplied lookup
// (the tokenizer's decode of one id), so they are testable without a model.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "engine/token_event.h"

namespace strata::server {

using TokenTextFn = std::function<std::string(int32_t)>;

// Serializes with invalid UTF-8 replaced by U+FFFD (token pieces can split a
// code point), so dumping never throws.
std::string dump_json(const nlohmann::json& j);
// "data: <json>\n\n".
std::string sse_frame(const nlohmann::json& j);

// "stop", "length", "abort", "error"; nullptr for kNone.
const char* finish_reason_text(FinishReason reason);

// {"prompt_tokens", "completion_tokens", "total_tokens",
//  "prompt_tokens_details": {"cached_tokens"}}.
nlohmann::json usage_json(const TokenUsage& usage);

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]},
// num_top entries of top_logprobs per token. ids and logprobs are
// [num_tokens]; extra entries of the longer one are ignored.
nlohmann::json chat_logprobs_json(std::span<const int32_t> ids,
                                  std::span<const SampleResult> logprobs, int32_t num_top,
                                  const TokenTextFn& token_text);

// Completions: {"tokens", "token_logprobs", "top_logprobs": [{text: lp}],
// "text_offset"}; *text_offset is the byte offset of the first token's text
// and is advanced past these tokens.
nlohmann::json completion_logprobs_json(std::span<const int32_t> ids,
                                        std::span<const SampleResult> logprobs, int32_t num_top,
                                        const TokenTextFn& token_text, size_t* text_offset);

}  // namespace strata::server
