// ChatTemplate: the model's chat template, executed by strata's Jinja engine
// (jinja::ChatTemplateRenderer) exactly as Hugging Face's
// apply_chat_template renders it, so every chat request's prompt is the text
// the model was trained on.
//
// The source is the GGUF's tokenizer.chat_template, or a file given with
// --chat-template; a model with neither gets ChatML, written as a Jinja
// template and rendered by the same engine (is_fallback() tells the caller
// to log it). bos_token and eos_token are the tokenizer's BOS/EOS texts.
//
// render() answers a template that raises (raise_exception, e.g. Gemma's
// role alternation check) or fails on the input with the 400 to send,
// carrying the template's message. Immutable once created: copies share
// the parsed template; render() is thread-safe.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "jinja/chat_template_renderer.h"
#include "server/api_error.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace strata::server {

class ChatTemplate {
 public:
  // Parses `source` with `tokenizer`'s special tokens; an empty source is
  // the ChatML fallback. A syntax error names its line and column.
  static Result<ChatTemplate> create(std::string_view source, const Tokenizer& tokenizer);
  // The model's own template (tokenizer.chat_template), or ChatML.
  static Result<ChatTemplate> for_model(const Tokenizer& tokenizer);
  // --chat-template FILE: the file's text (an empty file is an error).
  static Result<ChatTemplate> from_file(const std::string& path, const Tokenizer& tokenizer);

  // The ChatML template used when a model has none.
  static std::string_view chatml_source();

  // Renders one request's `messages` (ready for the template: see
  // protocol.h's ChatRequest::template_messages). Errors: a 400 naming
  // `messages` with the template's message.
  std::optional<ApiError> render(const nlohmann::ordered_json& messages,
                                 const jinja::ChatRenderParams& params, std::string* out) const;

  // Whether `prompt` begins with the BOS text (the tokenizer then adds none).
  bool starts_with_bos(std::string_view prompt) const;
  bool is_fallback() const { return is_fallback_; }

 private:
  ChatTemplate(std::shared_ptr<const jinja::ChatTemplateRenderer> renderer, bool is_fallback)
      : renderer_(std::move(renderer)), is_fallback_(is_fallback) {}

  std::shared_ptr<const jinja::ChatTemplateRenderer> renderer_;
  bool is_fallback_ = false;
};

// `given` when set, else the model's own template; a model template that
// does not parse falls back to ChatML, with a line on stderr.
std::shared_ptr<const ChatTemplate> chat_template_or_model(
    std::shared_ptr<const ChatTemplate> given, const Tokenizer& tokenizer);

}  // namespace strata::server
