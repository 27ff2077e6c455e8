#include "server/chat_template.h"

namespace strata::server {
namespace {

bool contains(std::string_view s, std::string_view what) {
  return s.find(what) != std::string_view::npos;
}

std::string_view trim(std::string_view s) {
  const char* ws = " \t\n\r";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

// The system text (system and developer messages joined), and the rest.
std::string leading_system(const std::vector<ChatMessage>& messages, size_t* first_other) {
  std::string system;
  size_t i = 0;
  while (i < messages.size() && (messages[i].role == "system" || messages[i].role == "developer")) {
    if (!system.empty()) system += "\n\n";
    system += messages[i].content;
    ++i;
  }
  *first_other = i;
  return system;
}

}  // namespace

ChatTemplate ChatTemplate::detect(std::string_view src) {
  ChatTemplate t;
  if (contains(src, "<|im_start|>")) {
    t.kind_ = ChatTemplateKind::kChatMl;
    // A default system prompt (Qwen2, Qwen2.5): a literal system turn in
    // the template source, "\n" written as an escape there.
    const std::string_view open = "<|im_start|>system\\n";
    for (size_t at = src.find(open); at != std::string_view::npos; at = src.find(open, at + 1)) {
      const size_t begin = at + open.size();
      const size_t end = src.find("<|im_end|>", begin);
      if (end == std::string_view::npos) break;
      const std::string_view text = src.substr(begin, end - begin);
      if (!text.empty() && text.find_first_of("{}'\"+") == std::string_view::npos) {
        t.default_system_ = std::string(text);
        break;
      }
    }
  } else if (contains(src, "<|start_header_id|>")) {
    t.kind_ = ChatTemplateKind::kLlama3;
    t.has_date_header_ = contains(src, "Cutting Knowledge Date");
  } else if (contains(src, "<start_of_turn>")) {
    t.kind_ = ChatTemplateKind::kGemma;
  } else if (contains(src, "<|user|>") && contains(src, "<|end|>")) {
    t.kind_ = ChatTemplateKind::kPhi3;
    t.eos_text_ = "<|endoftext|>";
  } else if (contains(src, "[INST]")) {
    t.kind_ = contains(src, "<<SYS>>") ? ChatTemplateKind::kLlama2 : ChatTemplateKind::kMistral;
  } else {
    t.kind_ = ChatTemplateKind::kChatMl;
    t.is_fallback_ = true;
  }
  return t;
}

const char* ChatTemplate::name() const {
  switch (kind_) {
    case ChatTemplateKind::kChatMl:
      return "chatml";
    case ChatTemplateKind::kLlama3:
      return "llama3";
    case ChatTemplateKind::kLlama2:
      return "llama2";
    case ChatTemplateKind::kMistral:
      return "mistral";
    case ChatTemplateKind::kGemma:
      return "gemma";
    case ChatTemplateKind::kPhi3:
      return "phi3";
  }
  return "chatml";
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt) const {
  std::string out;
  switch (kind_) {
    case ChatTemplateKind::kChatMl: {
      const bool has_system =
          !messages.empty() && (messages[0].role == "system" || messages[0].role == "developer");
      if (!has_system && !default_system_.empty()) {
        out += "<|im_start|>system\n" + default_system_ + "<|im_end|>\n";
      }
      for (const ChatMessage& m : messages) {
        const std::string& role = m.role == "developer" ? std::string("system") : m.role;
        out += "<|im_start|>" + role + "\n" + m.content + "<|im_end|>\n";
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      break;
    }
    case ChatTemplateKind::kLlama3: {
      size_t i = 0;
      if (has_date_header_) {
        // Llama 3.1: a system turn always comes first, dated.
        const std::string system = leading_system(messages, &i);
        out += "<|start_header_id|>system<|end_header_id|>\n\n";
        out += "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
        out += trim(system);
        out += "<|eot_id|>";
      }
      for (; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        const std::string role = m.role == "developer" ? "system"
                                 : m.role == "tool"    ? "ipython"
                                                       : m.role;
        out += "<|start_header_id|>" + role + "<|end_header_id|>\n\n";
        out += trim(m.content);
        out += "<|eot_id|>";
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      break;
    }
    case ChatTemplateKind::kGemma: {
      size_t i = 0;
      const std::string system = leading_system(messages, &i);
      bool is_first = true;
      for (; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        const std::string role = m.role == "assistant" ? "model" : m.role;
        std::string content(trim(m.content));
        if (is_first && !system.empty()) content = system + "\n\n" + content;
        is_first = false;
        out += "<start_of_turn>" + role + "\n" + content + "<end_of_turn>\n";
      }
      if (add_generation_prompt) out += "<start_of_turn>model\n";
      break;
    }
    case ChatTemplateKind::kPhi3: {
      for (const ChatMessage& m : messages) {
        const std::string role = m.role == "developer" ? "system" : m.role;
        out += "<|" + role + "|>\n" + m.content + "<|end|>\n";
      }
      out += add_generation_prompt ? std::string("<|assistant|>\n") : eos_text_;
      break;
    }
    case ChatTemplateKind::kLlama2:
    case ChatTemplateKind::kMistral: {
      size_t i = 0;
      const std::string system = leading_system(messages, &i);
      bool is_first_user = true;
      for (; i < messages.size(); ++i) {
        const ChatMessage& m = messages[i];
        if (m.role == "assistant") {
          if (kind_ == ChatTemplateKind::kLlama2) {
            out += " " + std::string(trim(m.content)) + " " + eos_text_;
          } else {
            out += m.content + eos_text_;
          }
          continue;
        }
        // Llama 2 strips the (system-prefixed) user turn; Mistral does not.
        std::string user = m.content;
        if (is_first_user && !system.empty()) {
          user = kind_ == ChatTemplateKind::kLlama2 ? "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + user
                                                    : system + "\n\n" + user;
        }
        if (kind_ == ChatTemplateKind::kLlama2) user = std::string(trim(user));
        is_first_user = false;
        if (kind_ == ChatTemplateKind::kLlama2 && !out.empty()) out += "<s>";
        out += "[INST] " + user + " [/INST]";
      }
      break;
    }
  }
  return out;
}

}  // namespace strata::server
