// Render time of real chat templates for one chat request: a system prompt,
// 6 turns (3 user, 3 assistant, one of them a tool call, plus its tool
// result) and two tools, through ChatTemplateRenderer::render (including the
// JSON-to-Value conversion a server request pays). Also the one-time parse.
// The target is well under 1 ms per render.
//
// BM_Request/<template> is what one such request costs the server before the
// engine sees it: the HTTP body (the chat as an OpenAI client sends it:
// tool-call arguments as JSON strings) parsed as ordered JSON, checked by the
// protocol (/tokenize's chat form, which takes tools), rendered by the
// server's ChatTemplate; BM_RequestTokenized adds the tokenizer's encode
// (the e2e model's 512-token vocabulary, BUILD/models/llama-f32-peaky.gguf).
//
// The templates come from llama.cpp's source in node-llama-cpp@3.22.1
// (oracle/): tests/jinja/jinja_reference.py extracts them into
// BUILD/jinja_differential_data/templates/ (the jinja_differential ctest
// does it); this benchmark runs that script itself when they are missing.
//
//   build/bench_jinja [--benchmark_filter=Render]
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "jinja/chat_template_renderer.h"
#include "server/chat_template.h"
#include "server/prompt_builder.h"
#include "server/protocol.h"
#include "tokenizer/tokenizer.h"

namespace {

using json = nlohmann::ordered_json;
using strata::jinja::ChatRenderParams;
using strata::jinja::ChatTemplateOptions;
using strata::jinja::ChatTemplateRenderer;

const char* kTemplates[] = {
    "Qwen-Qwen3-0.6B",
    "Qwen3-Coder",
    "meta-llama-Llama-3.1-8B-Instruct",
    "mistralai-Mistral-Nemo-Instruct-2407",
    "google-gemma-4-31B-it",
    "openai-gpt-oss-120b",
    "deepseek-ai-DeepSeek-V3.1",
    "ibm-granite-granite-4.0",
};

const json& chat() {
  static const json messages = json::parse(R"([
    {"role": "system", "content": "You are a helpful assistant. Answer concisely and use the tools when they help."},
    {"role": "user", "content": "What's the weather like in Paris today? I'm planning a walk along the Seine."},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call00001", "type": "function",
      "function": {"name": "get_weather", "arguments": {"location": "Paris, France", "unit": "celsius"}}}]},
    {"role": "tool", "tool_call_id": "call00001", "name": "get_weather",
     "content": "{\"temperature\": 21, \"condition\": \"sunny\", \"wind_kmh\": 8}"},
    {"role": "assistant", "content": "It is 21 °C and sunny in Paris with a light wind — a good day for a walk."},
    {"role": "user", "content": "Great. Can you find me a few museums near the river that are open on Mondays?"},
    {"role": "assistant", "content": "Musée d'Orsay is closed on Mondays, but the Louvre and the Musée de l'Orangerie are usually open. Want opening hours?"},
    {"role": "user", "content": "Yes please, and tell me which one is least crowded in the morning."}
  ])");
  return messages;
}

const json& tools() {
  static const json t = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather",
      "description": "Get the current weather in a given location",
      "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "City and country, e.g. Paris, France"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["location"]}}},
    {"type": "function", "function": {"name": "search_places",
      "description": "Search points of interest with opening hours",
      "parameters": {"type": "object", "properties": {
        "query": {"type": "string", "description": "What to look for"},
        "near": {"type": "string", "description": "A landmark or address"},
        "open_on": {"type": "string", "description": "Weekday"},
        "max_results": {"type": "integer", "default": 5}},
        "required": ["query"]}}}
  ])");
  return t;
}

std::filesystem::path templates_dir() {
  if (const char* env = std::getenv("STRATA_JINJA_TEMPLATES")) return env;
  const std::filesystem::path dir =
      std::filesystem::path(STRATA_BINARY_DIR) / "jinja_differential_data" / "templates";
  if (!std::filesystem::exists(dir)) {
    const std::string cmd = std::string("/usr/bin/python3 ") + STRATA_SOURCE_DIR +
                            "/tests/jinja/jinja_reference.py --bundle " + STRATA_SOURCE_DIR +
                            "/oracle/node_modules/node-llama-cpp-source/llama/gitRelease.bundle"
                            " --out " +
                            STRATA_BINARY_DIR + "/jinja_differential_data > /dev/null";
    if (std::system(cmd.c_str()) != 0) {
      std::cerr << "bench_jinja: could not extract the templates (" << cmd << ")\n";
    }
  }
  return dir;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ChatTemplateOptions options() {
  ChatTemplateOptions o;
  o.bos_token = "<s>";
  o.eos_token = "</s>";
  return o;
}

void BM_Render(benchmark::State& state, const std::string& source) {
  auto renderer = ChatTemplateRenderer::create(source, options());
  if (!renderer.is_ok()) {
    state.SkipWithError(renderer.error().to_string().c_str());
    return;
  }
  ChatRenderParams params;
  params.tools = &tools();
  params.add_generation_prompt = true;
  size_t bytes = 0;
  for (auto _ : state) {
    auto out = renderer->render(chat(), params);
    if (!out.is_ok()) {
      state.SkipWithError(out.error().to_string().c_str());
      return;
    }
    bytes = out->size();
    benchmark::DoNotOptimize(out->data());
  }
  state.counters["prompt_bytes"] = static_cast<double>(bytes);
}

void BM_Parse(benchmark::State& state, const std::string& source) {
  for (auto _ : state) {
    auto renderer = ChatTemplateRenderer::create(source, options());
    if (!renderer.is_ok()) {
      state.SkipWithError(renderer.error().to_string().c_str());
      return;
    }
    benchmark::DoNotOptimize(&renderer);
  }
  state.counters["source_bytes"] = static_cast<double>(source.size());
}

// The tokenizer of the e2e model (null when the models are not generated).
const strata::Tokenizer* tokenizer() {
  static const std::unique_ptr<strata::Tokenizer> tok = []() -> std::unique_ptr<strata::Tokenizer> {
    auto gguf =
        strata::GgufFile::open(std::string(STRATA_BINARY_DIR) + "/models/llama-f32-peaky.gguf");
    if (!gguf) return nullptr;
    auto t = strata::Tokenizer::from_gguf(*gguf);
    return t ? std::move(*t) : nullptr;
  }();
  return tok.get();
}

// The request body an OpenAI client sends for chat() with tools().
const std::string& request_body() {
  static const std::string body = [] {
    json messages = chat();
    for (json& m : messages) {
      if (!m.contains("tool_calls")) continue;
      for (json& call : m["tool_calls"]) {
        call["function"]["arguments"] = call["function"]["arguments"].dump();
      }
    }
    return json{
        {"model", "m"}, {"messages", messages}, {"tools", tools()}, {"add_generation_prompt", true}}
        .dump();
  }();
  return body;
}

void BM_Request(benchmark::State& state, const std::string& source, bool encode) {
  if (tokenizer() == nullptr) {
    state.SkipWithError("models/llama-f32-peaky.gguf missing (scripts/make-models.sh BUILD)");
    return;
  }
  auto tpl = strata::server::ChatTemplate::create(source, *tokenizer());
  if (!tpl) {
    state.SkipWithError(tpl.status().message().c_str());
    return;
  }
  const strata::server::PromptBuilder builder(*tokenizer(), *tpl);
  strata::server::ProtocolLimits limits;
  limits.vocab_size = tokenizer()->vocab_size();
  limits.max_model_len = 1 << 20;
  size_t num = 0;
  for (auto _ : state) {
    json body;
    strata::server::TokenizeRequest req;
    if (auto e = strata::server::parse_json_body(request_body(), limits, &body)) {
      state.SkipWithError(e->message.c_str());
      return;
    }
    if (auto e = strata::server::parse_tokenize_request(body, limits, &req)) {
      state.SkipWithError(e->message.c_str());
      return;
    }
    if (encode) {
      std::vector<int32_t> ids;
      if (auto e = builder.tokenize(req, &ids)) {
        state.SkipWithError(e->message.c_str());
        return;
      }
      num = ids.size();
      benchmark::DoNotOptimize(ids.data());
    } else {
      std::string text;
      if (auto e = builder.chat_text(req.chat, &text)) {
        state.SkipWithError(e->message.c_str());
        return;
      }
      num = text.size();
      benchmark::DoNotOptimize(text.data());
    }
  }
  state.counters[encode ? "prompt_tokens" : "prompt_bytes"] = static_cast<double>(num);
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path dir = templates_dir();
  for (const char* name : kTemplates) {
    const std::filesystem::path file = dir / (std::string(name) + ".jinja");
    if (!std::filesystem::exists(file)) {
      std::cerr << "bench_jinja: missing " << file << "\n";
      return 1;
    }
    const std::string source = read_file(file);
    benchmark::RegisterBenchmark((std::string("BM_Render/") + name).c_str(), BM_Render, source)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("BM_Parse/") + name).c_str(), BM_Parse, source)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("BM_Request/") + name).c_str(), BM_Request, source,
                                 false)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark((std::string("BM_RequestTokenized/") + name).c_str(), BM_Request,
                                 source, true)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
