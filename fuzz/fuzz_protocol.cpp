// libFuzzer target: the OpenAI request parser/validator (src/server/protocol)
// on arbitrary request bodies. Each input is the body of every route at once,
// as the server handles it: parse_json_body, then the route's parser
// (/v1/completions, /v1/chat/completions, /tokenize, /detokenize), then, for
// the generation routes, resolve_max_tokens. It runs under two sets of
// limits: the server's defaults with a real model's numbers, and the
// tightest the options allow (so every cap is reached).
//
// Besides crashes and sanitizer reports (uncaught exceptions included), it
// checks an oracle: an error is a well-formed 400 naming a known parameter;
// an accepted request satisfies every bound protocol.h documents (ranges,
// counts, token ids inside the vocabulary, exactly one prompt form...), its
// strings are valid UTF-8, and an accepted body is nested no deeper than
// max_json_depth. Seeds and a dictionary: fuzz/corpus/protocol/,
// fuzz/protocol.dict.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api_error.h"
#include "server/protocol.h"

namespace {

using nlohmann::json;
using strata::server::ApiError;
using strata::server::ChatMessage;
using strata::server::ChatRequest;
using strata::server::CompletionRequest;
using strata::server::DetokenizeRequest;
using strata::server::GenerationParams;
using strata::server::ProtocolLimits;
using strata::server::TokenizeRequest;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

ProtocolLimits default_limits() {
  ProtocolLimits l;  // the server's defaults for the request caps
  l.vocab_size = 32000;
  l.max_model_len = 4096;
  return l;
}

ProtocolLimits tight_limits() {
  ProtocolLimits l;
  l.vocab_size = 2;
  l.max_model_len = 2;
  l.max_n = 1;
  l.max_stop = 1;
  l.max_stop_bytes = 1;
  l.max_top_logprobs = 0;
  l.max_logit_bias = 1;
  l.max_abs_logit_bias = 1.0f;
  l.max_json_depth = 4;
  return l;
}

const std::set<std::string>& known_params() {
  static const std::set<std::string> params = {
      "",
      "model",
      "max_tokens",
      "max_completion_tokens",
      "temperature",
      "top_p",
      "top_k",
      "min_p",
      "repetition_penalty",
      "presence_penalty",
      "frequency_penalty",
      "n",
      "stop",
      "seed",
      "logit_bias",
      "min_tokens",
      "ignore_eos",
      "priority",
      "cache_salt",
      "user",
      "stream",
      "stream_options",
      "stream_options.include_usage",
      "prompt",
      "echo",
      "logprobs",
      "messages",
      "top_logprobs",
      "add_generation_prompt",
      "chat_template",
      "add_special_tokens",
      "tokens",
      "stop_token_ids",
      "include_stop_str_in_output",
      "skip_special_tokens",
      "response_format",
      "tools",
      "tool_choice",
      "functions",
      "function_call",
      "parallel_tool_calls",
      "suffix",
      "best_of",
      "guided_json",
      "guided_regex",
      "guided_choice",
      "guided_grammar",
      "structured_outputs",
      "prompt_logprobs",
      "continue_final_message",
      "chat_template_kwargs",
      "documents",
  };
  return params;
}

// A rejection: a 400 invalid_request_error naming a known parameter, with a
// fixed one-line message (never user text) and a body that is valid JSON.
void check_error(const ApiError& e) {
  check(e.http_status == 400);
  check(e.type == "invalid_request_error");
  check(e.code == "invalid_value" || e.code == "context_length_exceeded" ||
        e.code == "unknown_parameter");
  // An unknown argument is named in `param` (at most 64 bytes of it); every
  // other error names a parameter strata knows.
  if (e.code == "unknown_parameter") {
    check(!e.param.empty() && e.param.size() <= 64);
  } else {
    check(known_params().count(e.param) == 1);
  }
  check(!e.message.empty() && e.message.size() < 200);
  for (char c : e.message) check(c >= 0x20 && c < 0x7f);
  const json body = json::parse(e.body(), nullptr, /*allow_exceptions=*/false);
  check(body.is_object() && body.contains("error") && body.at("error").is_object());
  check(body.at("error").value("message", "") == e.message);
}

// Serializing fails (throws) on invalid UTF-8: every accepted string must be
// something the server can echo or log.
void check_utf8(const std::string& s) {
  try {
    (void)json(s).dump();
  } catch (const json::exception&) {
    check(false);
  }
}

bool in(double x, double lo, double hi) {
  return std::isfinite(x) && x >= lo && x <= hi;
}

void check_ids(const std::vector<int32_t>& ids, const ProtocolLimits& l) {
  for (int32_t id : ids) check(id >= 0 && id < l.vocab_size);
}

void check_messages(const std::vector<ChatMessage>& messages) {
  for (const ChatMessage& m : messages) {
    check(m.role == "system" || m.role == "developer" || m.role == "user" ||
          m.role == "assistant" || m.role == "tool");
    check_utf8(m.content);
  }
}

void check_params(const GenerationParams& p, const ProtocolLimits& l) {
  check(p.model.size() <= 1024);
  check_utf8(p.model);
  if (p.max_tokens) check(*p.max_tokens >= 1);
  check(in(p.temperature, 0.0, 2.0));
  check(in(p.top_p, 0.0, 1.0) && p.top_p > 0.0f);
  check(p.top_k >= 0 && p.top_k <= l.vocab_size);
  check(in(p.min_p, 0.0, 1.0));
  check(in(p.repetition_penalty, 0.0, 2.0) && p.repetition_penalty > 0.0f);
  check(in(p.presence_penalty, -2.0, 2.0));
  check(in(p.frequency_penalty, -2.0, 2.0));
  check(p.n >= 1 && p.n <= l.max_n);
  check(p.stop.size() <= static_cast<size_t>(l.max_stop));
  for (const std::string& s : p.stop) {
    check(s.size() <= l.max_stop_bytes);
    check_utf8(s);
  }
  check(p.logit_bias.size() <= static_cast<size_t>(l.max_logit_bias));
  std::set<int32_t> bias_ids;
  for (const auto& [id, bias] : p.logit_bias) {
    check(id >= 0 && id < l.vocab_size);
    check(in(bias, -l.max_abs_logit_bias, l.max_abs_logit_bias));
    check(bias_ids.insert(id).second);  // the sampler adds entries: one per token
  }
  check(p.min_tokens >= 0);
  if (p.max_tokens) check(p.min_tokens <= *p.max_tokens);
  check(p.priority >= -1000000 && p.priority <= 1000000);
  check(p.cache_salt.size() <= 1024);
  check_utf8(p.cache_salt);
  check(p.user.size() <= 1024);
  check_utf8(p.user);
  if (p.include_usage) check(p.stream);
}

// resolve_max_tokens for a prompt of num_prompt tokens: on success the
// output fits the context and max_tokens >= min_tokens.
void check_resolve(GenerationParams p, int64_t num_prompt, int32_t default_max_tokens,
                   const ProtocolLimits& l) {
  const std::optional<int32_t> asked = p.max_tokens;
  if (auto e =
          strata::server::resolve_max_tokens(num_prompt, default_max_tokens, "prompt", l, &p)) {
    check_error(*e);
    return;
  }
  check(p.max_tokens.has_value());
  check(*p.max_tokens >= 1 && *p.max_tokens <= l.max_model_len - num_prompt);
  if (asked) check(*p.max_tokens == *asked);
  if (!asked && default_max_tokens > 0) check(*p.max_tokens <= default_max_tokens);
  check(p.min_tokens <= *p.max_tokens);
}

void check_resolves(const GenerationParams& p, int64_t num_prompt, const ProtocolLimits& l) {
  for (int64_t n : {num_prompt, int64_t{1}, l.max_model_len - 1, l.max_model_len}) {
    for (int32_t default_max : {0, 16}) check_resolve(p, n, default_max, l);
  }
}

// Nesting depth of a parsed value, iteratively (the input may nest deep).
int64_t depth_of(const json& root) {
  int64_t max_depth = 0;
  std::vector<std::pair<const json*, int64_t>> stack = {{&root, 0}};
  while (!stack.empty()) {
    auto [v, d] = stack.back();
    stack.pop_back();
    if (!v->is_structured()) continue;
    max_depth = std::max(max_depth, d + 1);
    for (const json& child : *v) stack.emplace_back(&child, d + 1);
  }
  return max_depth;
}

void run_routes(std::string_view body, const ProtocolLimits& limits) {
  json j;
  if (auto e = strata::server::parse_json_body(body, limits, &j)) {
    check_error(*e);
    return;
  }
  check(j.is_object());
  // The brackets counted in the text bound the parsed depth (from above
  // only: of a duplicated key the parser keeps the last value).
  check(depth_of(j) <= strata::server::json_nesting_depth(body, limits.max_json_depth));
  check(depth_of(j) <= limits.max_json_depth);

  CompletionRequest completion;
  if (auto e = strata::server::parse_completion_request(j, limits, &completion)) {
    check_error(*e);
  } else {
    check_params(completion.params, limits);
    check(!completion.prompts.empty());
    int64_t num_prompt = 1;
    for (const auto& p : completion.prompts) {
      check(p.text.has_value() != p.ids.has_value());
      if (p.text) {
        check(!p.text->empty());
        check_utf8(*p.text);
      } else {
        check(!p.ids->empty());
        check_ids(*p.ids, limits);
        num_prompt = std::max(num_prompt, static_cast<int64_t>(p.ids->size()));
      }
    }
    if (completion.logprobs) {
      check(*completion.logprobs >= 0 && *completion.logprobs <= limits.max_top_logprobs);
      check(!completion.echo);
    }
    check_resolves(completion.params, num_prompt, limits);
  }

  ChatRequest chat;
  if (auto e = strata::server::parse_chat_request(j, limits, &chat)) {
    check_error(*e);
  } else {
    check_params(chat.params, limits);
    check(!chat.messages.empty());
    check_messages(chat.messages);
    check(chat.top_logprobs >= 0 && chat.top_logprobs <= limits.max_top_logprobs);
    if (chat.top_logprobs > 0) check(chat.logprobs);
    check_resolves(chat.params, 1, limits);
  }

  TokenizeRequest tokenize;
  if (auto e = strata::server::parse_tokenize_request(j, limits, &tokenize)) {
    check_error(*e);
  } else {
    check(tokenize.prompt.has_value() != !tokenize.messages.empty());
    if (tokenize.prompt) check_utf8(*tokenize.prompt);
    check_messages(tokenize.messages);
  }

  DetokenizeRequest detokenize;
  if (auto e = strata::server::parse_detokenize_request(j, limits, &detokenize)) {
    check_error(*e);
  } else {
    check_ids(detokenize.tokens, limits);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A copy sized exactly to the input (no terminator or spare capacity, as a
  // std::string would have), so reading past the body is caught.
  const std::vector<char> copy(data, data + size);
  const std::string_view body(copy.data(), copy.size());
  static const ProtocolLimits kDefault = default_limits();
  static const ProtocolLimits kTight = tight_limits();
  run_routes(body, kDefault);
  run_routes(body, kTight);
  return 0;
}
