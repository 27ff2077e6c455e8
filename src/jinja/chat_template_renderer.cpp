#include "jinja/chat_template_renderer.h"

#include "jinja/py_string.h"

namespace strata::jinja {
namespace {

using json = nlohmann::ordered_json;

// transformers' marker for continue_final_message.
constexpr std::string_view kContinueTag = "CONTINUE_FINAL_MESSAGE_TAG ";
constexpr std::string_view kContinueTagStripped = "CONTINUE_FINAL_MESSAGE_TAG";

TemplateError argument_error(std::string message) {
  return TemplateError(ErrorKind::kRuntime, std::move(message));
}

}  // namespace

Expected<ChatTemplateRenderer> ChatTemplateRenderer::create(std::string_view source,
                                                            ChatTemplateOptions options) {
  Expected<Template> t = Template::parse(source, options.parse);
  if (!t.is_ok()) return t.error();
  return ChatTemplateRenderer(std::move(t).value(), std::string(source), std::move(options));
}

bool ChatTemplateRenderer::starts_with_bos(std::string_view prompt) const {
  const auto& bos = options_.bos_token;
  return bos && !bos->empty() && prompt.substr(0, bos->size()) == *bos;
}

Expected<std::string> ChatTemplateRenderer::render_once(const json& messages,
                                                        const ChatRenderParams& params) const {
  std::vector<std::pair<std::string, Value>> vars;
  if (options_.bos_token) vars.emplace_back("bos_token", Value::string(*options_.bos_token));
  if (options_.eos_token) vars.emplace_back("eos_token", Value::string(*options_.eos_token));
  for (const auto& [name, text] : options_.special_tokens) {
    vars.emplace_back(name, Value::string(text));
  }
  if (params.chat_template_kwargs && !params.chat_template_kwargs->is_null()) {
    if (!params.chat_template_kwargs->is_object()) {
      return argument_error("chat_template_kwargs must be an object");
    }
    for (const auto& [key, value] : params.chat_template_kwargs->items()) {
      if (key == "messages" || key == "tools" || key == "documents" ||
          key == "add_generation_prompt") {
        return argument_error("chat_template_kwargs may not set '" + key +
                              "': it is a parameter of its own");
      }
      vars.emplace_back(key, value_from_json(value));
    }
  }
  if (!messages.is_array()) return argument_error("messages must be a list of message objects");
  vars.emplace_back("messages", value_from_json(messages));
  Value tools = Value::none();
  if (params.tools && !params.tools->is_null()) {
    if (!params.tools->is_array()) {
      return argument_error(
          "Tools should either be a JSON schema, or a callable function with "
          "type hints and a docstring suitable for auto-conversion to a schema.");
    }
    for (const auto& tool : *params.tools) {
      if (!tool.is_object()) {
        return argument_error(
            "Tools should either be a JSON schema, or a callable function with type hints and a "
            "docstring suitable for auto-conversion to a schema.");
      }
    }
    tools = value_from_json(*params.tools);
  }
  vars.emplace_back("tools", std::move(tools));
  Value documents = Value::none();
  if (params.documents && !params.documents->is_null()) {
    if (!params.documents->is_array()) {
      return argument_error("Documents should be a list of dicts with 'title' and 'text' keys!");
    }
    for (const auto& doc : *params.documents) {
      if (!doc.is_object()) {
        return argument_error("Documents should be a list of dicts with 'title' and 'text' keys!");
      }
    }
    documents = value_from_json(*params.documents);
  }
  vars.emplace_back("documents", std::move(documents));
  vars.emplace_back("add_generation_prompt", Value::boolean(params.add_generation_prompt));
  return template_.render(vars, options_.render);
}

Expected<std::string> ChatTemplateRenderer::render(const json& messages,
                                                   const ChatRenderParams& params) const {
  try {
    return render_checked(messages, params);
  } catch (TemplateException& e) {  // value_from_json's depth bound
    return std::move(e.error());
  } catch (const std::bad_alloc&) {
    return TemplateError(ErrorKind::kLimit, "out of memory while rendering the chat template");
  } catch (const std::exception& e) {
    return TemplateError(ErrorKind::kRuntime, std::string("internal error: ") + e.what());
  }
}

Expected<std::string> ChatTemplateRenderer::render_checked(const json& messages,
                                                           const ChatRenderParams& params) const {
  if (!params.continue_final_message) return render_once(messages, params);

  // transformers' render_jinja_template, continue_final_message branch.
  if (params.add_generation_prompt) {
    return argument_error(
        "continue_final_message and add_generation_prompt are not compatible. Use "
        "continue_final_message when you want the model to continue the final message, and "
        "add_generation_prompt when you want to add a header that will prompt it to start a new "
        "assistant message instead.");
  }
  if (!messages.is_array() || messages.empty() || !messages.back().is_object()) {
    return argument_error("continue_final_message is set but there is no final message");
  }
  json chat = messages;
  json& last = chat.back();
  auto content = last.find("content");
  if (content == last.end() || content->is_null()) {
    return argument_error(
        "continue_final_message is set but the final message has no \"content\" to continue!");
  }
  if (source_.find("content") == std::string::npos) {
    return argument_error(
        "continue_final_message is set to \"content\" but this is not an accepted field in the "
        "chat_template");
  }
  std::string final_message;
  if (content->is_array()) {
    bool found = false;
    for (auto it = content->rbegin(); it != content->rend(); ++it) {
      if (it->is_object() && it->contains("text")) {
        json& text = (*it)["text"];
        if (!text.is_string()) return argument_error("the final message's text is not a string");
        final_message = text.get<std::string>();
        text = final_message + std::string(kContinueTag);
        found = true;
        break;
      }
    }
    if (!found) {
      return argument_error(
          "continue_final_message is set but we could not find any text to continue in the final "
          "message!");
    }
  } else if (content->is_string()) {
    final_message = content->get<std::string>();
    *content = final_message + std::string(kContinueTag);
  } else {
    return argument_error("the final message's content is neither a string nor a list");
  }
  ChatRenderParams once = params;
  once.continue_final_message = false;
  Expected<std::string> rendered = render_once(chat, once);
  if (!rendered.is_ok()) return rendered;
  std::string& text = rendered.value();
  const std::string_view stripped = py::strip(final_message, nullptr, true, true);
  if (text.find(stripped) == std::string::npos ||
      text.find(kContinueTagStripped) == std::string::npos) {
    return argument_error(
        "continue_final_message is set but the final message does not appear in the chat after "
        "applying the chat template! This can happen if the chat template deletes portions of the "
        "final message. Please verify the chat template and final message in your chat to ensure "
        "they are compatible.");
  }
  const size_t tag_loc = text.rfind(kContinueTagStripped);
  if (std::string_view(text).substr(tag_loc, kContinueTag.size()) == kContinueTag) {
    text.resize(tag_loc);
  } else {
    text = std::string(py::strip(std::string_view(text).substr(0, tag_loc), nullptr, false, true));
  }
  return rendered;
}

Status ChatTemplateRenderer::parse_tool_call_arguments(json* messages) {
  if (!messages->is_array()) return invalid_argument("messages must be an array");
  for (size_t m = 0; m < messages->size(); ++m) {
    json& message = (*messages)[m];
    if (!message.is_object() || message.value("role", json()) != "assistant") continue;
    auto calls = message.find("tool_calls");
    if (calls == message.end() || !calls->is_array()) continue;
    for (size_t c = 0; c < calls->size(); ++c) {
      json& call = (*calls)[c];
      if (!call.is_object()) continue;
      auto function = call.find("function");
      if (function == call.end() || !function->is_object()) continue;
      auto arguments = function->find("arguments");
      if (arguments == function->end() || arguments->is_null() ||
          (arguments->is_string() && arguments->get_ref<const std::string&>().empty())) {
        (*function)["arguments"] = json::object();
        continue;
      }
      if (!arguments->is_string()) continue;
      try {
        *arguments = json::parse(arguments->get_ref<const std::string&>());
      } catch (const json::exception& e) {
        return invalid_argument("messages[" + std::to_string(m) + "].tool_calls[" +
                                std::to_string(c) +
                                "].function.arguments is not valid JSON: " + e.what());
      }
    }
  }
  return Status::ok();
}

}  // namespace strata::jinja
