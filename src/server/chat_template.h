// ChatTemplate: turns chat messages into the prompt text a model was trained
// on. There is no Jinja engine: the model's tokenizer.chat_template is
// recognized as one of a few well-known families and rendered natively.
//   ChatML (Qwen2/2.5/3, many others)  <|im_start|>role\ncontent<|im_end|>\n
//   Llama 3                            <|start_header_id|>role<|end_header_id|>\n\n...
//   Llama 2 ([INST] with <<SYS>>)      [INST] <<SYS>>\n...\n<</SYS>>\n\n... [/INST]
//   Mistral ([INST] without <<SYS>>)   [INST] ... [/INST]...</s>
//   Gemma                              <start_of_turn>user\n...<end_of_turn>\n
//   Phi-3                              <|user|>\n...<|end|>\n<|assistant|>\n
// Llama 3.1+ templates (with "Cutting Knowledge Date") also get their
// system header with the template's default date.
// An empty or unrecognized template falls back to ChatML (is_fallback()
// tells the caller to log it). The BOS token is not rendered: the tokenizer
// adds it. A plain value; thread-safe to share.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/protocol.h"

namespace strata::server {

enum class ChatTemplateKind { kChatMl, kLlama3, kLlama2, kMistral, kGemma, kPhi3 };

class ChatTemplate {
 public:
  // Detects the family of `jinja_source` (the GGUF tokenizer.chat_template).
  static ChatTemplate detect(std::string_view jinja_source);

  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  ChatTemplateKind kind() const { return kind_; }
  bool is_fallback() const { return is_fallback_; }
  const char* name() const;

 private:
  ChatTemplateKind kind_ = ChatTemplateKind::kChatMl;
  bool is_fallback_ = false;
  bool has_date_header_ = false;  // Llama 3.1+
  std::string default_system_;    // ChatML: used when the chat has no system turn
  std::string eos_text_ = "</s>";
};

}  // namespace strata::server
