#include "server/protocol.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <string_view>
#include <utility>

#include "jinja/chat_template_renderer.h"
#include "server/json_field.h"
#include "server/structured_output.h"

namespace strata::server {
namespace {

using nlohmann::json;

// Integer field in [lo, hi]. Floats (even integral ones), booleans and
// strings are type errors.
std::optional<ApiError> get_int(const json& obj, const char* key, int64_t lo, int64_t hi,
                                std::optional<int64_t>* out) {
  const json* v = find_field(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number_integer()) return invalid_param(key, "Expected an integer.");
  int64_t x = 0;
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return invalid_param(key, "Integer out of range.");
    }
    x = static_cast<int64_t>(u);
  } else {
    x = v->get<int64_t>();
  }
  if (x < lo || x > hi) return invalid_param(key, "Integer out of range.");
  *out = x;
  return std::nullopt;
}

template <typename T>
std::optional<ApiError> get_int_into(const json& obj, const char* key, int64_t lo, int64_t hi,
                                     T* out) {
  std::optional<int64_t> v;
  if (auto e = get_int(obj, key, lo, hi, &v)) return e;
  if (v) *out = static_cast<T>(*v);
  return std::nullopt;
}

// Finite number in [lo, hi].
std::optional<ApiError> get_float(const json& obj, const char* key, double lo, double hi,
                                  float* out) {
  const json* v = find_field(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) return invalid_param(key, "Expected a number.");
  const double x = v->get<double>();
  if (!std::isfinite(x)) return invalid_param(key, "Expected a finite number.");
  if (x < lo || x > hi) return invalid_param(key, "Number out of range.");
  *out = static_cast<float>(x);
  return std::nullopt;
}

std::optional<ApiError> get_bool(const json& obj, const char* key, bool* out) {
  const json* v = find_field(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) return invalid_param(key, "Expected a boolean.");
  *out = v->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> get_string(const json& obj, const char* key, size_t max_bytes,
                                   std::string* out) {
  const json* v = find_field(obj, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) return invalid_param(key, "Expected a string.");
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > max_bytes) return invalid_param(key, "String too long.");
  *out = s;
  return std::nullopt;
}

// An array of token ids in [0, vocab).
std::optional<ApiError> get_token_ids(const json& v, const char* param,
                                      const ProtocolLimits& limits, std::vector<int32_t>* out) {
  out->clear();
  out->reserve(v.size());
  for (const json& t : v) {
    if (!t.is_number_integer()) return invalid_param(param, "Token ids must be integers.");
    if (t.is_number_unsigned() ? t.get<uint64_t>() >= static_cast<uint64_t>(limits.vocab_size)
                               : (t.get<int64_t>() < 0 || t.get<int64_t>() >= limits.vocab_size)) {
      return invalid_param(param, "Token id outside the vocabulary.");
    }
    out->push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return std::nullopt;
}

// Fields strata knows but does not implement, each refused by name (a
// request is never answered as if the field were absent).
std::optional<ApiError> refuse_unimplemented(const json& b) {
  static constexpr std::pair<const char*, const char*> kRefused[] = {
      {"functions", "Function calling is not supported."},
      {"function_call", "Function calling is not supported."},
      {"suffix", "suffix (insertion) is not supported."},
      {"best_of", "best_of is not supported; use n."},
      {"prompt_logprobs", "prompt_logprobs is not supported."},
  };
  for (const auto& [key, message] : kRefused) {
    if (find_field(b, key) != nullptr) return invalid_param(key, message);
  }
  // tools, tool_choice, parallel_tool_calls, response_format, structured_outputs
  // and guided_*: server/output_constraint.h.
  return std::nullopt;
}

// OpenAI's answer to an unknown argument: the name is in `param` only (at
// most 64 bytes of it; messages never echo what the client sent).
ApiError unknown_argument(const std::string& key) {
  ApiError e = invalid_param(key.size() <= 64 ? key : key.substr(0, 64),
                             "Unrecognized request argument (strata does not implement it).");
  e.code = "unknown_parameter";
  return e;
}

// Any field outside `own` is refused by name: a typo or a feature strata
// lacks must not be answered as if it were absent.
std::optional<ApiError> refuse_unknown_fields(const json& b,
                                              std::initializer_list<std::string_view> own) {
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& key = it.key();
    if (std::any_of(own.begin(), own.end(), [&](std::string_view k) { return k == key; })) {
      continue;
    }
    return unknown_argument(key);
  }
  return std::nullopt;
}

std::optional<ApiError> refuse_unknown(const json& b, std::initializer_list<std::string_view> own) {
  static constexpr std::string_view kCommon[] = {"model",
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
                                                 "stop_token_ids",
                                                 "include_stop_str_in_output",
                                                 "skip_special_tokens",
                                                 "priority",
                                                 "cache_salt",
                                                 "user",
                                                 "stream",
                                                 "stream_options",
                                                 "response_format"};
  for (auto it = b.begin(); it != b.end(); ++it) {
    const std::string& key = it.key();
    const auto matches = [&](std::string_view k) { return k == key; };
    if (std::any_of(std::begin(kCommon), std::end(kCommon), matches) ||
        std::any_of(own.begin(), own.end(), matches) ||
        is_structured_output_field(key)) {  // structured_output.h
      continue;
    }
    return unknown_argument(key);
  }
  return std::nullopt;
}

std::optional<ApiError> parse_params(const json& b, const ProtocolLimits& limits,
                                     GenerationParams* p) {
  if (auto e = get_string(b, "model", 1024, &p->model)) return e;
  std::optional<int64_t> max_tokens;
  if (auto e = get_int(b, "max_tokens", 1, std::numeric_limits<int32_t>::max(), &max_tokens)) {
    return e;
  }
  std::optional<int64_t> max_completion_tokens;
  if (auto e = get_int(b, "max_completion_tokens", 1, std::numeric_limits<int32_t>::max(),
                       &max_completion_tokens)) {
    return e;
  }
  if (max_completion_tokens) max_tokens = max_completion_tokens;
  if (max_tokens) p->max_tokens = static_cast<int32_t>(*max_tokens);

  if (auto e = get_float(b, "temperature", 0.0, 2.0, &p->temperature)) return e;
  if (auto e = get_float(b, "top_p", 0.0, 1.0, &p->top_p)) return e;
  if (find_field(b, "top_p") != nullptr && p->top_p <= 0.0f) {
    return invalid_param("top_p", "Number out of range.");
  }
  if (auto e = get_int_into(b, "top_k", -1, limits.vocab_size, &p->top_k)) return e;
  if (p->top_k < 0) p->top_k = 0;
  if (auto e = get_float(b, "min_p", 0.0, 1.0, &p->min_p)) return e;
  if (auto e = get_float(b, "repetition_penalty", 0.0, 2.0, &p->repetition_penalty)) return e;
  if (p->repetition_penalty <= 0.0f) {
    return invalid_param("repetition_penalty", "Number out of range.");
  }
  if (auto e = get_float(b, "presence_penalty", -2.0, 2.0, &p->presence_penalty)) return e;
  if (auto e = get_float(b, "frequency_penalty", -2.0, 2.0, &p->frequency_penalty)) return e;
  if (auto e = get_int_into(b, "n", 1, limits.max_n, &p->n)) return e;

  if (const json* stop = find_field(b, "stop")) {
    if (stop->is_string()) {
      p->stop = {stop->get<std::string>()};
    } else if (stop->is_array()) {
      if (stop->size() > static_cast<size_t>(limits.max_stop)) {
        return invalid_param("stop", "Too many stop sequences.");
      }
      for (const json& s : *stop) {
        if (!s.is_string()) return invalid_param("stop", "Stop sequences must be strings.");
        p->stop.push_back(s.get<std::string>());
      }
    } else {
      return invalid_param("stop", "Expected a string or an array of strings.");
    }
    for (const std::string& s : p->stop) {
      if (s.size() > limits.max_stop_bytes) return invalid_param("stop", "Stop sequence too long.");
    }
  }

  if (const json* seed = find_field(b, "seed")) {
    if (!seed->is_number_integer()) return invalid_param("seed", "Expected an integer.");
    p->seed = seed->is_number_unsigned() ? seed->get<uint64_t>()
                                         : static_cast<uint64_t>(seed->get<int64_t>());
  }

  if (const json* bias = find_field(b, "logit_bias")) {
    if (!bias->is_object()) return invalid_param("logit_bias", "Expected an object.");
    if (bias->size() > static_cast<size_t>(limits.max_logit_bias)) {
      return invalid_param("logit_bias", "Too many entries.");
    }
    for (auto it = bias->begin(); it != bias->end(); ++it) {
      const std::string& key = it.key();
      if (key.empty() || key.size() > 10) return invalid_param("logit_bias", "Invalid token id.");
      int64_t id = 0;
      for (char c : key) {
        if (c < '0' || c > '9') return invalid_param("logit_bias", "Invalid token id.");
        id = id * 10 + (c - '0');
      }
      if (id >= limits.vocab_size) {
        return invalid_param("logit_bias", "Token id outside the vocabulary.");
      }
      if (!it.value().is_number()) return invalid_param("logit_bias", "Bias must be a number.");
      const double v = it.value().get<double>();
      if (!std::isfinite(v) || std::fabs(v) > limits.max_abs_logit_bias) {
        return invalid_param("logit_bias", "Bias must be in [-100, 100].");
      }
      p->logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(v));
    }
    // "7" and "007" name the same token; the sampler adds every entry, so
    // both would stack past the bound. One entry per token id.
    std::vector<int32_t> ids;
    ids.reserve(p->logit_bias.size());
    for (const auto& entry : p->logit_bias) ids.push_back(entry.first);
    std::sort(ids.begin(), ids.end());
    if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) {
      return invalid_param("logit_bias", "Duplicate token id.");
    }
  }

  if (auto e =
          get_int_into(b, "min_tokens", 0, std::numeric_limits<int32_t>::max(), &p->min_tokens)) {
    return e;
  }
  if (p->max_tokens && p->min_tokens > *p->max_tokens) {
    return invalid_param("min_tokens", "min_tokens must not exceed max_tokens.");
  }
  if (auto e = get_bool(b, "ignore_eos", &p->ignore_eos)) return e;
  if (const json* ids = find_field(b, "stop_token_ids")) {
    if (!ids->is_array()) return invalid_param("stop_token_ids", "Expected an array of token ids.");
    if (ids->size() > static_cast<size_t>(limits.max_stop_token_ids)) {
      return invalid_param("stop_token_ids", "Too many stop token ids.");
    }
    if (auto e = get_token_ids(*ids, "stop_token_ids", limits, &p->stop_token_ids)) return e;
  }
  if (auto e = get_bool(b, "include_stop_str_in_output", &p->include_stop_str_in_output)) {
    return e;
  }
  if (auto e = get_bool(b, "skip_special_tokens", &p->skip_special_tokens)) return e;
  if (auto e = get_int_into(b, "priority", -1000000, 1000000, &p->priority)) return e;
  if (auto e = get_string(b, "cache_salt", 1024, &p->cache_salt)) return e;
  if (find_field(b, "cache_salt") != nullptr && p->cache_salt.empty()) {
    return invalid_param("cache_salt", "cache_salt must not be empty.");
  }
  if (auto e = get_string(b, "user", 1024, &p->user)) return e;
  if (auto e = get_bool(b, "stream", &p->stream)) return e;
  if (const json* so = find_field(b, "stream_options")) {
    if (!so->is_object()) return invalid_param("stream_options", "Expected an object.");
    if (!p->stream) return invalid_param("stream_options", "stream_options requires stream.");
    for (auto it = so->begin(); it != so->end(); ++it) {
      if (it.key() != "include_usage") {
        return invalid_param("stream_options", "Only stream_options.include_usage is supported.");
      }
    }
    if (auto e = get_bool(*so, "include_usage", &p->include_usage)) {
      e->param = "stream_options.include_usage";
      return e;
    }
  }
  return std::nullopt;
}

// Message content: a string or an array of {"type":"text","text":...} parts.
std::optional<ApiError> parse_messages(const json& b, std::vector<ChatMessage>* out) {
  const json* msgs = find_field(b, "messages");
  if (msgs == nullptr) return invalid_param("messages", "messages is required.");
  if (!msgs->is_array() || msgs->empty()) {
    return invalid_param("messages", "Expected a non-empty array of messages.");
  }
  for (const json& m : *msgs) {
    if (!m.is_object()) return invalid_param("messages", "Each message must be an object.");
    ChatMessage msg;
    const json* role = find_field(m, "role");
    if (role == nullptr || !role->is_string()) {
      return invalid_param("messages", "Each message needs a string role.");
    }
    msg.role = role->get<std::string>();
    if (msg.role != "system" && msg.role != "developer" && msg.role != "user" &&
        msg.role != "assistant" && msg.role != "tool") {
      return invalid_param("messages", "Unknown message role.");
    }
    const json* content = find_field(m, "content");
    if (content == nullptr) {
      if (msg.role != "assistant") return invalid_param("messages", "Message content is required.");
    } else if (content->is_string()) {
      msg.content = content->get<std::string>();
    } else if (content->is_array()) {
      for (const json& part : *content) {
        if (!part.is_object()) return invalid_param("messages", "Invalid content part.");
        const json* type = find_field(part, "type");
        const json* text = find_field(part, "text");
        if (type == nullptr || !type->is_string() || type->get<std::string>() != "text" ||
            text == nullptr || !text->is_string()) {
          return invalid_param("messages", "Only text content parts are supported.");
        }
        if (&part != &content->front()) msg.content += '\n';
        msg.content += text->get<std::string>();
      }
    } else {
      return invalid_param("messages", "Message content must be a string or an array.");
    }
    out->push_back(std::move(msg));
  }
  return std::nullopt;
}

using ordered_json = nlohmann::ordered_json;

const ordered_json* find_ordered(const ordered_json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// The messages as the template sees them (parse_messages checked them).
std::optional<ApiError> template_messages(const ordered_json& b, ordered_json* out) {
  *out = ordered_json::array();
  for (const ordered_json& m : b.at("messages")) {
    ordered_json msg = m;
    auto content = msg.find("content");
    if (content != msg.end() && content->is_array()) {
      std::string text;
      for (size_t i = 0; i < content->size(); ++i) {
        if (i > 0) text += '\n';
        text += (*content)[i].at("text").get_ref<const std::string&>();
      }
      *content = std::move(text);
    }
    out->push_back(std::move(msg));
  }
  if (!jinja::ChatTemplateRenderer::parse_tool_call_arguments(out).is_ok()) {
    return invalid_param("messages",
                         "Tool call arguments must be a JSON object encoded as a string.");
  }
  return std::nullopt;
}

// A list of JSON objects (tools, documents), or absent.
std::optional<ApiError> get_object_list(const ordered_json& b, const char* key, ordered_json* out) {
  const ordered_json* v = find_ordered(b, key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_array()) return invalid_param(key, "Expected an array of objects.");
  for (const ordered_json& item : *v) {
    if (!item.is_object()) return invalid_param(key, "Expected an array of objects.");
  }
  *out = *v;
  return std::nullopt;
}

// The template fields shared by chat completions and /tokenize's chat form.
std::optional<ApiError> parse_template_inputs(const ordered_json& ob, const json& b,
                                              ChatTemplateInputs* out) {
  if (auto e = template_messages(ob, &out->messages)) return e;
  if (auto e = get_object_list(ob, "documents", &out->documents)) return e;
  if (const ordered_json* kw = find_ordered(ob, "chat_template_kwargs")) {
    if (!kw->is_object()) return invalid_param("chat_template_kwargs", "Expected an object.");
    for (const char* reserved : {"messages", "tools", "documents", "add_generation_prompt"}) {
      if (kw->contains(reserved)) {
        return invalid_param("chat_template_kwargs",
                             "chat_template_kwargs may not set messages, tools, documents or "
                             "add_generation_prompt.");
      }
    }
    out->chat_template_kwargs = *kw;
  }
  if (auto e = get_bool(b, "add_generation_prompt", &out->add_generation_prompt)) return e;
  if (auto e = get_bool(b, "continue_final_message", &out->continue_final_message)) return e;
  if (out->continue_final_message && out->add_generation_prompt) {
    return invalid_param("continue_final_message",
                         "continue_final_message needs add_generation_prompt set to false.");
  }
  return std::nullopt;
}
}  // namespace

bool ChatTemplateInputs::is_thinking_disabled() const {
  if (!chat_template_kwargs.is_object()) return false;
  auto it = chat_template_kwargs.find("enable_thinking");
  return it != chat_template_kwargs.end() && it->is_boolean() && !it->get<bool>();
}

int32_t json_nesting_depth(std::string_view text, int32_t cap) {
  int32_t depth = 0;
  int32_t max_depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) max_depth = depth;
      if (max_depth > cap) return max_depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return max_depth;
}

std::optional<ApiError> parse_json_body(std::string_view body, const ProtocolLimits& limits,
                                        nlohmann::json* out) {
  if (body.empty()) return invalid_param("", "The request body is empty.");
  // nlohmann's lexer ends the input at a NUL byte, so `{"prompt":"a"}\0junk`
  // would parse as the object alone; a NUL is never valid in JSON text (it
  // must be escaped inside strings), so the whole body is refused.
  if (body.find('\0') != std::string_view::npos) {
    return invalid_param("", "The request body is not valid JSON.");
  }
  if (json_nesting_depth(body, limits.max_json_depth) > limits.max_json_depth) {
    return invalid_param("", "The request body is nested too deeply.");
  }
  // Invalid UTF-8 inside strings, NaN/Infinity literals and truncation are
  // all parse errors; the parser's own message is not passed on.
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_param("", "The request body is not valid JSON.");
  if (!j.is_object()) return invalid_param("", "The request body must be a JSON object.");
  *out = std::move(j);
  return std::nullopt;
}

std::optional<ApiError> parse_json_body(std::string_view body, const ProtocolLimits& limits,
                                        nlohmann::ordered_json* out) {
  if (body.empty()) return invalid_param("", "The request body is empty.");
  if (body.find('\0') != std::string_view::npos) {
    return invalid_param("", "The request body is not valid JSON.");
  }
  if (json_nesting_depth(body, limits.max_json_depth) > limits.max_json_depth) {
    return invalid_param("", "The request body is nested too deeply.");
  }
  ordered_json j = ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_param("", "The request body is not valid JSON.");
  if (!j.is_object()) return invalid_param("", "The request body must be a JSON object.");
  *out = std::move(j);
  return std::nullopt;
}

std::optional<ApiError> parse_completion_request(const json& b, const ProtocolLimits& limits,
                                                 CompletionRequest* out) {
  if (auto e = refuse_unimplemented(b)) return e;
  if (auto e = refuse_unknown(b, {"prompt", "echo", "logprobs", "add_special_tokens"})) return e;
  if (auto e = parse_params(b, limits, &out->params)) return e;
  const json* prompt = find_field(b, "prompt");
  if (prompt == nullptr) return invalid_param("prompt", "prompt is required.");
  const auto add_prompt = [&](const json& v) -> std::optional<ApiError> {
    CompletionRequest::Prompt p;
    if (v.is_string()) {
      p.text = v.get<std::string>();
      if (p.text->empty()) return invalid_param("prompt", "The prompt is empty.");
    } else if (v.is_array()) {
      std::vector<int32_t> ids;
      if (auto e = get_token_ids(v, "prompt", limits, &ids)) return e;
      if (ids.empty()) return invalid_param("prompt", "The prompt is empty.");
      p.ids = std::move(ids);
    } else {
      return invalid_param("prompt", "Expected a string or an array of token ids.");
    }
    out->prompts.push_back(std::move(p));
    return std::nullopt;
  };
  if (prompt->is_array() && !prompt->empty() &&
      (prompt->front().is_string() || prompt->front().is_array())) {
    // A list of prompts: each its own choices, indexed prompt * n + choice.
    if (prompt->size() > static_cast<size_t>(limits.max_prompts)) {
      return invalid_param("prompt", "Too many prompts in one request.");
    }
    for (const json& one : *prompt) {
      if (!one.is_string() && !one.is_array()) {
        return invalid_param("prompt", "Expected a list of strings or of token id arrays.");
      }
      if (auto e = add_prompt(one)) return e;
    }
  } else if (prompt->is_array() && prompt->empty()) {
    return invalid_param("prompt", "The prompt is empty.");
  } else {
    if (auto e = add_prompt(*prompt)) return e;
  }
  if (static_cast<int64_t>(out->prompts.size()) * out->params.n > limits.max_n * 4) {
    return invalid_param("n", "Too many choices in one request (prompts x n).");
  }
  if (auto e = get_bool(b, "add_special_tokens", &out->add_special_tokens)) return e;
  if (auto e = get_bool(b, "echo", &out->echo)) return e;
  std::optional<int64_t> logprobs;
  if (const json* lp = find_field(b, "logprobs"); lp != nullptr && lp->is_boolean()) {
    return invalid_param("logprobs", "Expected an integer.");
  }
  if (auto e = get_int(b, "logprobs", 0, limits.max_top_logprobs, &logprobs)) return e;
  if (logprobs) out->logprobs = static_cast<int32_t>(*logprobs);
  if (out->echo && out->logprobs) {
    return invalid_param("echo", "echo together with logprobs (prompt logprobs) is not supported.");
  }
  return std::nullopt;
}

std::optional<ApiError> parse_chat_request(const ordered_json& ob, const ProtocolLimits& limits,
                                           ChatRequest* out) {
  const json b(ob);
  if (auto e = refuse_unimplemented(b)) return e;
  if (find_field(b, "chat_template") != nullptr) {
    return invalid_param("chat_template", "Templates from clients are not accepted.");
  }
  if (auto e = refuse_unknown(
          b, {"messages", "logprobs", "top_logprobs", "add_generation_prompt",
              "continue_final_message", "chat_template_kwargs", "documents", "add_special_tokens",
              "tools", "tool_choice", "parallel_tool_calls"})) {  // tools: tool_call_parser.h
    return e;
  }
  if (auto e = parse_params(b, limits, &out->params)) return e;
  if (auto e = parse_messages(b, &out->messages)) return e;
  if (auto e = get_bool(b, "logprobs", &out->logprobs)) return e;
  if (auto e = get_int_into(b, "top_logprobs", 0, limits.max_top_logprobs, &out->top_logprobs)) {
    return e;
  }
  if (find_field(b, "top_logprobs") != nullptr && !out->logprobs) {
    return invalid_param("top_logprobs", "top_logprobs requires logprobs to be true.");
  }
  if (auto e = get_bool(b, "add_special_tokens", &out->add_special_tokens)) return e;
  if (auto e = parse_template_inputs(ob, b, &out->chat)) return e;
  // The chat template renders the tools (tool_call_parser.h validates them).
  return get_object_list(ob, "tools", &out->chat.tools);
}

std::optional<ApiError> parse_chat_request(const json& b, const ProtocolLimits& limits,
                                           ChatRequest* out) {
  return parse_chat_request(ordered_json(b), limits, out);
}

std::optional<ApiError> parse_tokenize_request(const ordered_json& ob, const ProtocolLimits& limits,
                                               TokenizeRequest* out) {
  const json b(ob);
  if (find_field(b, "chat_template") != nullptr) {
    return invalid_param("chat_template", "Templates from clients are not accepted.");
  }
  if (find_field(b, "messages") != nullptr) {
    if (find_field(b, "prompt") != nullptr) {
      return invalid_param("prompt", "Send either prompt or messages, not both.");
    }
    if (auto e = refuse_unknown_fields(
            b, {"model", "messages", "tools", "documents", "add_generation_prompt",
                "continue_final_message", "chat_template_kwargs", "add_special_tokens"})) {
      return e;
    }
    if (auto e = parse_messages(b, &out->messages)) return e;
    if (auto e = parse_template_inputs(ob, b, &out->chat)) return e;
    if (auto e = get_object_list(ob, "tools", &out->chat.tools)) return e;
  } else {
    if (auto e = refuse_unknown_fields(b, {"model", "prompt", "add_special_tokens"})) return e;
    std::string prompt;
    if (find_field(b, "prompt") == nullptr) return invalid_param("prompt", "prompt is required.");
    if (auto e = get_string(b, "prompt", std::numeric_limits<size_t>::max(), &prompt)) return e;
    out->prompt = std::move(prompt);
  }
  std::string model;  // accepted as vLLM does; /tokenize serves the one model
  if (auto e = get_string(b, "model", 1024, &model)) return e;
  if (auto e = get_bool(b, "add_special_tokens", &out->add_special_tokens)) return e;
  return std::nullopt;
}

std::optional<ApiError> parse_tokenize_request(const json& b, const ProtocolLimits& limits,
                                               TokenizeRequest* out) {
  return parse_tokenize_request(ordered_json(b), limits, out);
}

std::optional<ApiError> parse_detokenize_request(const json& b, const ProtocolLimits& limits,
                                                 DetokenizeRequest* out) {
  const json* tokens = find_field(b, "tokens");
  if (tokens == nullptr || !tokens->is_array()) {
    return invalid_param("tokens", "Expected an array of token ids.");
  }
  return get_token_ids(*tokens, "tokens", limits, &out->tokens);
}

std::optional<ApiError> resolve_max_tokens(int64_t num_prompt_tokens, int32_t default_max_tokens,
                                           const char* prompt_param, const ProtocolLimits& limits,
                                           GenerationParams* p) {
  const int64_t room = limits.max_model_len - num_prompt_tokens;
  if (room < 1) {
    return context_length_exceeded(
        prompt_param, "The prompt (" + std::to_string(num_prompt_tokens) +
                          " tokens) leaves no room for output within --max-model-len " +
                          std::to_string(limits.max_model_len) + "; shorten the prompt.");
  }
  if (p->max_tokens) {
    if (*p->max_tokens > room) {
      return context_length_exceeded(
          "max_tokens", "The prompt (" + std::to_string(num_prompt_tokens) +
                            " tokens) plus max_tokens (" + std::to_string(*p->max_tokens) +
                            ") exceeds --max-model-len " + std::to_string(limits.max_model_len) +
                            "; lower max_tokens or shorten the prompt.");
    }
  } else {
    int64_t v = default_max_tokens > 0 ? std::min<int64_t>(default_max_tokens, room) : room;
    p->max_tokens = static_cast<int32_t>(v);
  }
  if (p->min_tokens > *p->max_tokens) {
    return invalid_param("min_tokens", "min_tokens must not exceed max_tokens.");
  }
  return std::nullopt;
}

}  // namespace strata::server
