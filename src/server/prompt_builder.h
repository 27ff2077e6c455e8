// PromptBuilder: the one place an OpenAI generation request becomes prompt
// token ids. The server uses it to build what the engine computes; the
// router (strata router) uses it to compute the same chained block hashes
// the replica's prefix cache will look up, so the two must never differ:
//
//   chat         the model's chat template renders the request's messages
//                with its template inputs (server/chat_template.h), then
//                the tokenizer encodes the text with special-token text
//                parsed, adding BOS/EOS as the model says unless the
//                rendered text already starts with BOS (no double BOS) or
//                the request sets add_special_tokens false;
//   completions  a text prompt is encoded the same way (BOS/EOS unless
//                add_special_tokens is false); token ids pass through
//                unchanged (parse_completion_request checked them). A list
//                of prompts gives one entry each.
//
// Borrows the Tokenizer and ChatTemplate (they must outlive it). Const and
// thread-safe: the server and the router call it from many threads.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/chat_template.h"
#include "server/protocol.h"
#include "tokenizer/tokenizer.h"

namespace strata::server {

// A parsed generation request and its prompt ids.
struct BuiltPrompt {
  bool is_chat = false;
  GenerationParams params;
  // One entry per prompt (chat: exactly one), none empty.
  std::vector<std::vector<int32_t>> prompts;
  // Completions with echo: per prompt, the text `echo` repeats (the prompt
  // text, or the ids decoded when the prompt was ids); empty without echo.
  std::vector<std::string> echo_texts;
  bool wants_logprobs = false;
  int32_t num_top_logprobs = 0;  // per token
  // Chat: chat_template_kwargs {"enable_thinking": false} (qwen3's
  // reasoning parser then passes everything through as content).
  bool is_thinking_disabled = false;
};

class PromptBuilder {
 public:
  PromptBuilder(const Tokenizer& tokenizer, const ChatTemplate& chat_template)
      : tokenizer_(tokenizer), chat_template_(chat_template) {}

  // The rendered prompt text (errors: the template's 400), and its ids.
  std::optional<ApiError> chat_text(const ChatTemplateInputs& chat, std::string* out) const;
  std::optional<ApiError> chat_prompt(const ChatTemplateInputs& chat, bool add_special_tokens,
                                      std::vector<int32_t>* out) const;
  std::vector<std::vector<int32_t>> completion_prompts(const CompletionRequest& request) const;

  // Parses `body` (an already parsed JSON object) as a chat or completions
  // request and builds its prompt. Errors are the ApiError to send, in the
  // server's order: the protocol's 400s, then model_not_found when
  // `served_model_name` is non-empty and the request names another model,
  // then an empty prompt after tokenization. max_tokens against the context
  // is the caller's (resolve_max_tokens, once the prompt's length is known).
  // Chat bodies should come ordered (parse_json_body's ordered overload):
  // the template sees the client's key order.
  std::optional<ApiError> build(const nlohmann::ordered_json& body, bool is_chat,
                                const ProtocolLimits& limits, std::string_view served_model_name,
                                BuiltPrompt* out) const;
  std::optional<ApiError> build(const nlohmann::json& body, bool is_chat,
                                const ProtocolLimits& limits, std::string_view served_model_name,
                                BuiltPrompt* out) const;

  // POST /tokenize: the prompt text, or the rendered messages, encoded with
  // the request's add_special_tokens as chat_prompt does.
  std::optional<ApiError> tokenize(const TokenizeRequest& request, std::vector<int32_t>* out) const;

 private:
  const Tokenizer& tokenizer_;
  const ChatTemplate& chat_template_;
};

}  // namespace strata::server
