#include "server/prompt_builder.h"

#include <utility>

namespace strata::server {

std::vector<int32_t> PromptBuilder::chat_prompt(const ChatRequest& request) const {
  return tokenizer_.encode(chat_template_.render(request.messages, request.add_generation_prompt),
                           /*add_special=*/true, /*parse_special=*/true);
}

std::vector<std::vector<int32_t>> PromptBuilder::completion_prompts(
    const CompletionRequest& request) const {
  std::vector<std::vector<int32_t>> out;
  out.reserve(request.prompts.size());
  for (const CompletionRequest::Prompt& p : request.prompts) {
    if (p.ids) {
      out.push_back(*p.ids);
    } else {
      out.push_back(tokenizer_.encode(p.text.value_or(std::string()), request.add_special_tokens,
                                      /*parse_special=*/true));
    }
  }
  return out;
}

std::optional<ApiError> PromptBuilder::build(const nlohmann::json& body, bool is_chat,
                                             const ProtocolLimits& limits,
                                             std::string_view served_model_name,
                                             BuiltPrompt* out) const {
  auto is_other_model = [&](const GenerationParams& p) {
    return !served_model_name.empty() && !p.model.empty() && p.model != served_model_name;
  };
  out->is_chat = is_chat;
  if (is_chat) {
    ChatRequest cr;
    if (auto e = parse_chat_request(body, limits, &cr)) return e;
    if (is_other_model(cr.params)) return model_not_found();
    out->prompts.push_back(chat_prompt(cr));
    out->params = std::move(cr.params);
    out->wants_logprobs = cr.logprobs;
    out->num_top_logprobs = cr.top_logprobs;
  } else {
    CompletionRequest cr;
    if (auto e = parse_completion_request(body, limits, &cr)) return e;
    if (is_other_model(cr.params)) return model_not_found();
    out->prompts = completion_prompts(cr);
    if (cr.echo) {
      for (size_t i = 0; i < cr.prompts.size(); ++i) {
        out->echo_texts.push_back(cr.prompts[i].text ? *cr.prompts[i].text
                                                     : tokenizer_.decode(out->prompts[i], false));
      }
    }
    out->params = std::move(cr.params);
    out->wants_logprobs = cr.logprobs.has_value();
    out->num_top_logprobs = cr.logprobs.value_or(0);
  }
  for (const auto& p : out->prompts) {
    if (p.empty()) {
      return invalid_param(is_chat ? "messages" : "prompt",
                           "The prompt is empty after tokenization.");
    }
  }
  return std::nullopt;
}

std::vector<int32_t> PromptBuilder::tokenize(const TokenizeRequest& request) const {
  if (request.prompt) {
    return tokenizer_.encode(*request.prompt, request.add_special_tokens, true);
  }
  return tokenizer_.encode(chat_template_.render(request.messages, request.add_generation_prompt),
                           request.add_special_tokens, true);
}

}  // namespace strata::server
