#include "server/prompt_builder.h"

#include <utility>

namespace strata::server {

std::optional<ApiError> PromptBuilder::chat_text(const ChatTemplateInputs& chat,
                                                 std::string* out) const {
  jinja::ChatRenderParams params;
  params.tools = &chat.tools;
  params.documents = &chat.documents;
  params.chat_template_kwargs = &chat.chat_template_kwargs;
  params.add_generation_prompt = chat.add_generation_prompt;
  params.continue_final_message = chat.continue_final_message;
  return chat_template_.render(chat.messages, params, out);
}

std::optional<ApiError> PromptBuilder::chat_prompt(const ChatTemplateInputs& chat,
                                                   bool add_special_tokens,
                                                   std::vector<int32_t>* out) const {
  std::string text;
  if (auto e = chat_text(chat, &text)) return e;
  // A template that writes BOS itself (Llama 3, Gemma) must not get a
  // second one from the tokenizer.
  const bool add_special = add_special_tokens && !chat_template_.starts_with_bos(text);
  *out = tokenizer_.encode(text, add_special, /*parse_special=*/true);
  return std::nullopt;
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
  return build(nlohmann::ordered_json(body), is_chat, limits, served_model_name, out);
}

std::optional<ApiError> PromptBuilder::build(const nlohmann::ordered_json& body, bool is_chat,
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
    std::vector<int32_t> ids;
    if (auto e = chat_prompt(cr.chat, cr.add_special_tokens, &ids)) return e;
    out->prompts.push_back(std::move(ids));
    out->is_thinking_disabled = cr.chat.is_thinking_disabled();
    out->params = std::move(cr.params);
    out->wants_logprobs = cr.logprobs;
    out->num_top_logprobs = cr.top_logprobs;
  } else {
    CompletionRequest cr;
    if (auto e = parse_completion_request(nlohmann::json(body), limits, &cr)) return e;
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

std::optional<ApiError> PromptBuilder::tokenize(const TokenizeRequest& request,
                                                std::vector<int32_t>* out) const {
  if (request.prompt) {
    *out = tokenizer_.encode(*request.prompt, request.add_special_tokens, true);
    return std::nullopt;
  }
  return chat_prompt(request.chat, request.add_special_tokens, out);
}

}  // namespace strata::server
