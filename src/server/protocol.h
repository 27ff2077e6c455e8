// OpenAI protocol requests: JSON bodies of /v1/completions and
// /v1/chat/completions (and /tokenize, /detokenize) parsed into plain structs,
// every field validated at the edge with typed limits. Nothing here touches
// the engine or the tokenizer: prompt-length and token-id checks that need
// them take the numbers from ProtocolLimits. Pure functions; thread-safe.
//
// Every parse_* returns std::nullopt on success or the ApiError to send
// (status 400, naming `param`). Unknown fields are 400s naming the field.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api_error.h"

namespace strata::server {

// Limits a request is checked against. The server fills the model-dependent
// ones (vocab_size, max_model_len) at start-up.
struct ProtocolLimits {
  int32_t vocab_size = 0;     // token ids must be in [0, vocab_size)
  int64_t max_model_len = 0;  // prompt + max_tokens must fit
  int32_t max_n = 16;         // choices per request
  int32_t max_stop = 4;       // stop strings
  int32_t max_stop_token_ids = 64;
  int32_t max_prompts = 64;     // prompts in one completions request
  size_t max_stop_bytes = 256;  // bytes per stop string
  int32_t max_top_logprobs = 20;
  int32_t max_logit_bias = 1024;  // entries
  float max_abs_logit_bias = 100.0f;
  int32_t max_json_depth = 64;  // nesting of [ and {
};

// Fields shared by both generation endpoints (OpenAI's and the serving
// extensions). Optional fields keep their "absent" state so the server can
// apply defaults that depend on the prompt length.
struct GenerationParams {
  std::string model;                  // empty = absent
  std::optional<int32_t> max_tokens;  // max_tokens or max_completion_tokens, >= 1
  float temperature = 1.0f;           // [0, 2]
  float top_p = 1.0f;                 // (0, 1]
  int32_t top_k = 0;                  // -1 or 0 = off
  float min_p = 0.0f;                 // [0, 1]
  float repetition_penalty = 1.0f;    // (0, 2]
  float presence_penalty = 0.0f;      // [-2, 2]
  float frequency_penalty = 0.0f;     // [-2, 2]
  int32_t n = 1;                      // [1, max_n]
  std::vector<std::string> stop;      // <= max_stop, each <= max_stop_bytes
  std::optional<uint64_t> seed;
  std::vector<std::pair<int32_t, float>> logit_bias;  // ids < vocab, |bias| <= 100
  int32_t min_tokens = 0;                             // <= max_tokens
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;  // ids < vocab, <= max_stop_token_ids
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  int32_t priority = 0;
  std::string cache_salt;
  std::string user;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

struct CompletionRequest {
  GenerationParams params;
  // Exactly one is set: a text prompt or token ids.
  // One entry per prompt (a completions request may send a list): text, or
  // token ids when the client sent ids.
  struct Prompt {
    std::optional<std::string> text;
    std::optional<std::vector<int32_t>> ids;
  };
  std::vector<Prompt> prompts;  // non-empty
  bool add_special_tokens = true;
  bool echo = false;
  // logprobs: number of top alternatives per token, [0, max_top_logprobs];
  // absent = no logprobs.
  std::optional<int32_t> logprobs;
};

struct ChatMessage {
  std::string role;     // system, developer, user, assistant, tool
  std::string content;  // the text (parts joined with "\n"); empty when absent
};

// What the chat template renders besides the special tokens: the inputs of
// Hugging Face's apply_chat_template, as the client sent them (key order
// kept: tojson shows it).
struct ChatTemplateInputs {
  // The messages: every field passed through, text-part arrays joined into
  // one string with "\n" (vLLM's "string" content format), and assistant
  // tool_calls' JSON-string arguments parsed into objects.
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;                 // array or null
  nlohmann::ordered_json documents;             // array or null
  nlohmann::ordered_json chat_template_kwargs;  // object or null
  bool add_generation_prompt = true;
  bool continue_final_message = false;  // never together with add_generation_prompt

  // chat_template_kwargs {"enable_thinking": false}.
  bool is_thinking_disabled() const;
};

struct ChatRequest {
  GenerationParams params;
  std::vector<ChatMessage> messages;  // non-empty; roles and text, checked
  ChatTemplateInputs chat;
  // false: the tokenizer adds no BOS/EOS. true (default): it adds them,
  // except a BOS the rendered template already starts with.
  bool add_special_tokens = true;
  bool logprobs = false;
  int32_t top_logprobs = 0;  // [0, max_top_logprobs], needs logprobs
};

// POST /tokenize: a text prompt, or vLLM's chat form (messages, tools,
// add_generation_prompt, continue_final_message, chat_template_kwargs,
// add_special_tokens; documents too).
struct TokenizeRequest {
  std::optional<std::string> prompt;
  std::vector<ChatMessage> messages;
  ChatTemplateInputs chat;
  bool add_special_tokens = true;
};

// POST /detokenize.
struct DetokenizeRequest {
  std::vector<int32_t> tokens;
};

// Parses a request body: it must be a JSON object, valid UTF-8, nested at
// most limits.max_json_depth deep (checked before parsing, so a hostile
// nesting cannot exhaust the stack).
std::optional<ApiError> parse_json_body(std::string_view body, const ProtocolLimits& limits,
                                        nlohmann::json* out);
// The same, keeping key order (chat bodies: the template sees the order).
std::optional<ApiError> parse_json_body(std::string_view body, const ProtocolLimits& limits,
                                        nlohmann::ordered_json* out);

std::optional<ApiError> parse_completion_request(const nlohmann::json& body,
                                                 const ProtocolLimits& limits,
                                                 CompletionRequest* out);
// Chat and tokenize take the ordered body (key order reaches the template);
// the nlohmann::json overloads convert (keys then in sorted order).
std::optional<ApiError> parse_chat_request(const nlohmann::ordered_json& body,
                                           const ProtocolLimits& limits, ChatRequest* out);
std::optional<ApiError> parse_chat_request(const nlohmann::json& body, const ProtocolLimits& limits,
                                           ChatRequest* out);
std::optional<ApiError> parse_tokenize_request(const nlohmann::ordered_json& body,
                                               const ProtocolLimits& limits, TokenizeRequest* out);
std::optional<ApiError> parse_tokenize_request(const nlohmann::json& body,
                                               const ProtocolLimits& limits, TokenizeRequest* out);
std::optional<ApiError> parse_detokenize_request(const nlohmann::json& body,
                                                 const ProtocolLimits& limits,
                                                 DetokenizeRequest* out);

// Checks that prompt + max_tokens fits limits.max_model_len and fills an
// absent max_tokens with min(default_max_tokens, room left) (0 = all the
// room left). Errors are context_length_exceeded.
std::optional<ApiError> resolve_max_tokens(int64_t num_prompt_tokens, int32_t default_max_tokens,
                                           const char* prompt_param, const ProtocolLimits& limits,
                                           GenerationParams* params);

// Maximum nesting depth of [ and { outside strings; stops counting past `cap`.
int32_t json_nesting_depth(std::string_view text, int32_t cap);

}  // namespace strata::server
