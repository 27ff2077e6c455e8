// libFuzzer target: a Jinja chat template from untrusted bytes (--chat-template
// can come from a user). Each input is parsed and, when it parses, rendered
// through ChatTemplateRenderer with a small chat (messages with a tool call,
// tools, kwargs) under tight RenderLimits, so any crash, sanitizer report,
// leak, hang or unbounded allocation in the lexer, parser or interpreter
// shows. A parse or render error is a fine outcome; only its kind is checked.
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "jinja/chat_template_renderer.h"

namespace {

using json = nlohmann::ordered_json;

const json& messages() {
  static const json m = json::parse(R"([
    {"role": "system", "content": "You are helpful. {{ not a tag }}"},
    {"role": "user", "content": "Hi \u00e9 \ud83d\ude00"},
    {"role": "assistant", "content": null, "reasoning_content": "think",
     "tool_calls": [{"id": "c1", "type": "function",
                     "function": {"name": "get_weather", "arguments": {"city": "Paris", "n": 2.5}}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "{\"t\": 21}"},
    {"role": "user", "content": [{"type": "text", "text": "and now?"}]}])");
  return m;
}

const json& tools() {
  static const json t = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "description": "Weather", "parameters": {"type": "object", "properties": {
      "city": {"type": "string"}, "n": {"type": "number"}}, "required": ["city"]}}}])");
  return t;
}

const json& kwargs() {
  static const json k =
      json::parse(R"({"enable_thinking": false, "xs": [3, 1, 2], "d": {"b": 1, "a": 2}})");
  return k;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string source(reinterpret_cast<const char*>(data), size);
  strata::jinja::ChatTemplateOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.render.limits.max_output_bytes = 256 * 1024;
  options.render.limits.max_work_bytes = 4 * 1024 * 1024;
  options.render.limits.max_iterations = 20000;
  options.render.limits.max_call_depth = 16;
  options.render.limits.max_eval_depth = 400;
  options.render.now = [] {
    std::tm tm{};
    tm.tm_year = 126;
    tm.tm_mday = 15;
    return tm;
  };
  auto renderer = strata::jinja::ChatTemplateRenderer::create(source, options);
  if (!renderer.is_ok()) {
    if (renderer.error().kind() == strata::jinja::ErrorKind::kRaised) __builtin_trap();
    return 0;
  }
  for (int mode = 0; mode < 2; ++mode) {
    strata::jinja::ChatRenderParams params;
    params.tools = &tools();
    params.chat_template_kwargs = &kwargs();
    params.add_generation_prompt = mode == 0;
    params.continue_final_message = mode == 1;
    auto out = renderer->render(messages(), params);
    if (out.is_ok() && out.value().size() > options.render.limits.max_output_bytes)
      __builtin_trap();
  }
  return 0;
}
