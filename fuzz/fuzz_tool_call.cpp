// libFuzzer target: the tool-call side of structured outputs on arbitrary
// bytes (src/server/tool_call_parser, src/server/structured_output).
//
// The first byte picks the call syntax (hermes, llama3_json, mistral), a
// max_calls bound and a split point; the rest is model output. Oracle: the
// streaming parser fed the text in two pieces, and byte by byte, assembles
// to exactly what the whole-text parse returns (content, ids, names,
// arguments); every call has a name and its index is dense. The same bytes
// are also parsed as a request body by parse_structured_output and
// parse_tools: an error is a 400 naming a parameter, never a crash.
// Seeds: fuzz/corpus/tool_call/.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/protocol.h"
#include "server/structured_output.h"
#include "server/tool_call_parser.h"

namespace {

using strata::server::ParsedToolCalls;
using strata::server::ToolCallFormat;
using strata::server::ToolCallStreamParser;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void check_same(const ParsedToolCalls& a, const ParsedToolCalls& b) {
  check(a.content == b.content);
  check(a.calls.size() == b.calls.size());
  for (size_t i = 0; i < a.calls.size(); ++i) {
    check(a.calls[i].id == b.calls[i].id);
    check(a.calls[i].name == b.calls[i].name);
    check(a.calls[i].arguments == b.calls[i].arguments);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t head = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const ToolCallFormat format = static_cast<ToolCallFormat>(head % 3);
  const int32_t max_calls = (head / 3) % 4 == 0 ? 1 : (1 << 20);

  const ParsedToolCalls whole = strata::server::parse_tool_calls(format, text, "c", max_calls);
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    check(!whole.calls[i].name.empty());
    check(whole.calls[i].id == "c" + std::to_string(i));
  }
  check(static_cast<int32_t>(whole.calls.size()) <= max_calls);

  const size_t split = text.empty() ? 0 : (static_cast<size_t>(head) * 7919) % (text.size() + 1);
  {
    ToolCallStreamParser p(format, "c", max_calls);
    ParsedToolCalls got;
    strata::server::assemble_tool_deltas(p.push(std::string_view(text).substr(0, split)), &got);
    strata::server::assemble_tool_deltas(p.push(std::string_view(text).substr(split)), &got);
    strata::server::assemble_tool_deltas(p.finish(), &got);
    check_same(got, whole);
  }
  if (text.size() <= 512) {
    ToolCallStreamParser p(format, "c", max_calls);
    ParsedToolCalls got;
    for (char c : text) strata::server::assemble_tool_deltas(p.push(std::string_view(&c, 1)), &got);
    strata::server::assemble_tool_deltas(p.finish(), &got);
    check_same(got, whole);
  }

  // The bytes as a request body.
  strata::server::ProtocolLimits limits;
  nlohmann::json body;
  if (!strata::server::parse_json_body(text, limits, &body)) {
    std::optional<strata::server::StructuredOutput> so;
    if (auto e = strata::server::parse_structured_output(body, text, &so)) {
      check(e->http_status == 400 && !e->param.empty());
    }
    std::optional<strata::server::ToolSpec> tools;
    if (auto e = strata::server::parse_tools(body, text, &tools)) {
      check(e->http_status == 400 && !e->param.empty());
    } else if (tools && tools->constrained()) {
      (void)strata::server::tool_call_grammar(format, *tools);
    }
  }
  return 0;
}
