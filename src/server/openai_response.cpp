#include "server/openai_response.h"

#include <algorithm>

namespace strata::server {

using nlohmann::json;

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse_frame(const json& j) {
  return "data: " + dump_json(j) + "\n\n";
}

const char* finish_reason_text(FinishReason reason) {
  // JSON null while a choice is still running; the scheduler's names otherwise.
  return reason == FinishReason::kNone ? nullptr : finish_reason_name(reason);
}

json usage_json(const TokenUsage& u) {
  return json{{"prompt_tokens", u.num_prompt_tokens},
              {"completion_tokens", u.num_output_tokens},
              {"total_tokens", u.num_prompt_tokens + u.num_output_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.num_cached_prompt_tokens}}}};
}

namespace {

json bytes_of(const std::string& s) {
  json a = json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

size_t num_top_of(const SampleResult& r, int32_t num_top) {
  return std::min(r.top_logprobs.size(), static_cast<size_t>(std::max(num_top, 0)));
}

}  // namespace

json chat_logprobs_json(std::span<const int32_t> ids, std::span<const SampleResult> logprobs,
                        int32_t num_top, const TokenTextFn& token_text) {
  json content = json::array();
  const size_t n = std::min(ids.size(), logprobs.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string t = token_text(ids[i]);
    json top = json::array();
    for (size_t k = 0; k < num_top_of(logprobs[i], num_top); ++k) {
      const TokenLogprob& tl = logprobs[i].top_logprobs[k];
      const std::string tt = token_text(tl.token);
      top.push_back(json{{"token", tt}, {"logprob", tl.logprob}, {"bytes", bytes_of(tt)}});
    }
    content.push_back(json{{"token", t},
                           {"logprob", logprobs[i].logprob},
                           {"bytes", bytes_of(t)},
                           {"top_logprobs", std::move(top)}});
  }
  return json{{"content", std::move(content)}};
}

json completion_logprobs_json(std::span<const int32_t> ids, std::span<const SampleResult> logprobs,
                              int32_t num_top, const TokenTextFn& token_text, size_t* text_offset) {
  json tokens = json::array(), token_logprobs = json::array(), tops = json::array(),
       offsets = json::array();
  const size_t n = std::min(ids.size(), logprobs.size());
  for (size_t i = 0; i < n; ++i) {
    const std::string t = token_text(ids[i]);
    tokens.push_back(t);
    token_logprobs.push_back(logprobs[i].logprob);
    json top = json::object();
    for (size_t k = 0; k < num_top_of(logprobs[i], num_top); ++k) {
      const TokenLogprob& tl = logprobs[i].top_logprobs[k];
      top[token_text(tl.token)] = tl.logprob;
    }
    tops.push_back(std::move(top));
    offsets.push_back(*text_offset);
    *text_offset += t.size();
  }
  return json{{"tokens", std::move(tokens)},
              {"token_logprobs", std::move(token_logprobs)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

}  // namespace strata::server
