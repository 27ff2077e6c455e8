#include "server/chat_template.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

namespace strata::server {
namespace {

// ChatML, for models that ship no template. Content that is not a string
// (an assistant turn with only tool calls) renders as empty text.
constexpr std::string_view kChatMl =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

std::optional<std::string> token_text(const Tokenizer& tokenizer, int32_t id) {
  if (id < 0 || id >= tokenizer.vocab_size()) return std::nullopt;
  return tokenizer.token_text(id);
}

}  // namespace

std::string_view ChatTemplate::chatml_source() {
  return kChatMl;
}

Result<ChatTemplate> ChatTemplate::create(std::string_view source, const Tokenizer& tokenizer) {
  const bool is_fallback = source.empty();
  jinja::ChatTemplateOptions options;
  options.bos_token = token_text(tokenizer, tokenizer.bos_id());
  options.eos_token = token_text(tokenizer, tokenizer.eos_id());
  if (auto unk = token_text(tokenizer, tokenizer.unk_id())) {
    options.special_tokens.emplace_back("unk_token", *unk);
  }
  if (auto pad = token_text(tokenizer, tokenizer.pad_id())) {
    options.special_tokens.emplace_back("pad_token", *pad);
  }
  auto renderer =
      jinja::ChatTemplateRenderer::create(is_fallback ? kChatMl : source, std::move(options));
  if (!renderer.is_ok()) {
    return Status(StatusCode::kInvalidArgument, "chat template: " + renderer.error().to_string());
  }
  return ChatTemplate(
      std::make_shared<const jinja::ChatTemplateRenderer>(std::move(renderer).value()),
      is_fallback);
}

Result<ChatTemplate> ChatTemplate::for_model(const Tokenizer& tokenizer) {
  return create(tokenizer.chat_template(), tokenizer);
}

Result<ChatTemplate> ChatTemplate::from_file(const std::string& path, const Tokenizer& tokenizer) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kNotFound, "--chat-template: cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().empty()) {
    return Status(StatusCode::kInvalidArgument, "--chat-template: " + path + " is empty");
  }
  Result<ChatTemplate> t = create(text.str(), tokenizer);
  if (!t) return Status(t.status().code(), path + ": " + t.status().message());
  return t;
}

std::optional<ApiError> ChatTemplate::render(const nlohmann::ordered_json& messages,
                                             const jinja::ChatRenderParams& params,
                                             std::string* out) const {
  jinja::Expected<std::string> text = renderer_->render(messages, params);
  if (!text.is_ok()) {
    const jinja::TemplateError& e = text.error();
    // raise_exception's message verbatim (it is the template's answer to the
    // client); other failures say where in the template they happened.
    return invalid_param("messages", e.kind() == jinja::ErrorKind::kRaised
                                         ? e.message()
                                         : "The chat template failed: " + e.to_string());
  }
  *out = std::move(text).value();
  return std::nullopt;
}

bool ChatTemplate::starts_with_bos(std::string_view prompt) const {
  return renderer_->starts_with_bos(prompt);
}

std::shared_ptr<const ChatTemplate> chat_template_or_model(
    std::shared_ptr<const ChatTemplate> given, const Tokenizer& tokenizer) {
  if (given != nullptr) return given;
  Result<ChatTemplate> own = ChatTemplate::for_model(tokenizer);
  if (!own) {
    std::fprintf(stderr, "warning: the model's %s; using ChatML\n", own.status().message().c_str());
    own = ChatTemplate::create("", tokenizer);
  }
  return std::make_shared<const ChatTemplate>(std::move(*own));
}

}  // namespace strata::server
