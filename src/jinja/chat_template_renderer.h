// ChatTemplateRenderer: renders a model's chat template for one chat request
// the way Hugging Face transformers' apply_chat_template(tokenize=False)
// does, so the prompt text is byte-identical to what the model was trained
// on.
//
// The template sees `messages`, `tools` and `documents` (None when absent,
// as transformers passes them), `add_generation_prompt`, the special tokens
// (`bos_token`, `eos_token` and any others given), and every key of
// `chat_template_kwargs` (e.g. `enable_thinking`), which win over the special
// tokens. `continue_final_message` is transformers' algorithm: the final
// message's content (or its last text block) gets a marker appended, the
// chat is rendered, and the output is cut where the marker landed, so the
// model continues that message; like transformers, this does not require the
// final message to be the assistant's.
//
// Errors: a template calling raise_exception(msg) gives ErrorKind::kRaised
// with msg verbatim (answer 400 with it); other template failures kRuntime;
// bad arguments (add_generation_prompt with continue_final_message, a
// non-dict tool) kRuntime with transformers' message; limits kLimit.
//
// Thread-safety: immutable after create(); render() is const and may run on
// many threads at once (parse once per model, render per request).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/template.h"
#include "util/status.h"

namespace strata::jinja {

struct ChatTemplateOptions {
  // Passed to the template as bos_token / eos_token; unset: not passed (the
  // template sees them undefined).
  std::optional<std::string> bos_token;
  std::optional<std::string> eos_token;
  // Further special tokens by variable name (unk_token, pad_token, ...), as
  // transformers passes tokenizer.special_tokens_map.
  std::vector<std::pair<std::string, std::string>> special_tokens;
  ParseOptions parse;    // trim_blocks / lstrip_blocks on, as Hugging Face
  RenderOptions render;  // limits, and strftime_now's clock
};

// What one request asks for besides its messages.
struct ChatRenderParams {
  // JSON arrays; nullptr or JSON null: not given (the template sees None).
  const nlohmann::ordered_json* tools = nullptr;
  const nlohmann::ordered_json* documents = nullptr;
  bool add_generation_prompt = false;
  bool continue_final_message = false;
  // JSON object whose keys become template variables; nullptr or null: none.
  const nlohmann::ordered_json* chat_template_kwargs = nullptr;
};

class ChatTemplateRenderer {
 public:
  // Parses `source` (e.g. the GGUF's tokenizer.chat_template). A syntax
  // error is returned with its line and column.
  static Expected<ChatTemplateRenderer> create(std::string_view source,
                                               ChatTemplateOptions options);

  // Renders `messages` (a JSON array of message objects, passed to the
  // template as they are).
  Expected<std::string> render(const nlohmann::ordered_json& messages,
                               const ChatRenderParams& params = {}) const;

  // Whether `prompt` begins with the BOS token's text: then the tokenizer
  // must not add another BOS.
  bool starts_with_bos(std::string_view prompt) const;

  const std::optional<std::string>& bos_token() const { return options_.bos_token; }
  const std::optional<std::string>& eos_token() const { return options_.eos_token; }
  const Template& jinja_template() const { return template_; }

  // OpenAI clients send tool-call arguments as JSON strings; chat templates
  // expect objects (transformers' convention, which vLLM applies). Parses
  // every assistant message's tool_calls[].function.arguments string into
  // an object in place (empty or missing arguments become {}). A string
  // that is not valid JSON is an kInvalidArgument error naming the call.
  static Status parse_tool_call_arguments(nlohmann::ordered_json* messages);

 private:
  ChatTemplateRenderer(Template t, std::string source, ChatTemplateOptions options)
      : template_(std::move(t)), source_(std::move(source)), options_(std::move(options)) {}

  Expected<std::string> render_checked(const nlohmann::ordered_json& messages,
                                       const ChatRenderParams& params) const;
  Expected<std::string> render_once(const nlohmann::ordered_json& messages,
                                    const ChatRenderParams& params) const;

  Template template_;
  std::string source_;  // for continue_final_message's "content" check
  ChatTemplateOptions options_;
};

}  // namespace strata::jinja
