// Tool calling at the API (issue 18, item 4): the request's `tools`,
// `tool_choice` and `parallel_tool_calls`, validated; the model's tool-call
// syntax parsed into OpenAI `tool_calls`, whole or as streaming deltas; and,
// for tool_choice `required` or a named function, the grammar that makes the
// model's output a well-formed call whose arguments satisfy the function's
// parameter schema.
//
// Syntaxes (vLLM's --tool-call-parser names):
//   hermes       <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//                (Hermes, Qwen 2.5/3), any number of blocks amid text
//   llama3_json  {"name": "f", "parameters": {...}} at the start of the
//                output (after whitespace or <|python_tag|>), calls
//                separated by ';'
//   mistral      [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
// "arguments" and "parameters" are accepted in every syntax. A call's
// `arguments` is the exact text of that JSON value in the output (a string
// value: its decoded contents), so argument fragments streamed as they are
// generated concatenate to the non-streaming value.
//
// The non-streaming parse is the streaming parser fed the whole text, so the
// two agree by construction; tests check it at every split point. Text that
// may start a call is held back until it can be decided. A call block with no
// "name" is given back as content. Malformed text between calls inside a
// call region is dropped.
//
// Pure functions and small value classes; thread-compatible.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "server/api_error.h"
#include "util/status.h"

namespace strata::server {

enum class ToolCallFormat { kHermes, kLlama3Json, kMistral };

const char* tool_call_format_name(ToolCallFormat format);
// --tool-call-parser hermes|llama3_json|mistral.
Result<ToolCallFormat> tool_call_format_from_name(std::string_view name);
// The syntax a chat template's text teaches (its markers), or nullopt when
// it shows none (the caller then uses --tool-call-parser or hermes).
std::optional<ToolCallFormat> tool_call_format_for_template(std::string_view template_source);

struct ToolFunction {
  std::string name;
  std::string description;
  std::string parameters;  // JSON Schema text in document order; empty = any object
};

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

struct ToolSpec {
  std::vector<ToolFunction> functions;
  ToolChoice choice = ToolChoice::kAuto;
  std::string named;  // kNamed: the function's name
  bool parallel = true;

  // Whether the output must be constrained (required or named).
  bool constrained() const {
    return choice == ToolChoice::kRequired || choice == ToolChoice::kNamed;
  }
  // Whether the output is parsed for calls (anything but none).
  bool parses_calls() const { return choice != ToolChoice::kNone && !functions.empty(); }
  // The tools as the chat template receives them (OpenAI's shape).
  nlohmann::json to_template_json() const;
};

// Top-level body fields this module owns.
bool is_tool_field(std::string_view key);

// Reads tools / tool_choice / parallel_tool_calls (std::nullopt when `tools`
// is absent or empty and tool_choice is absent or "none"). `raw_body` gives
// the parameter schemas in document order. Errors are 400s naming the field
// (e.g. tools[1].function.name, tool_choice).
std::optional<ApiError> parse_tools(const nlohmann::json& body, std::string_view raw_body,
                                    std::optional<ToolSpec>* out);

// The grammar for a constrained spec: the output is exactly one call (or,
// with parallel, one or more) in `format`'s syntax, of the named function or
// any of them, with the arguments generated from the parameter schema.
// Errors name the tool whose schema the grammar engine refused, e.g.
//   tools[0].function.parameters: unsupported JSON Schema keyword 'not' at $
Result<Grammar> tool_call_grammar(ToolCallFormat format, const ToolSpec& spec);
// A cache key for tool_call_grammar's result (format + functions + choice).
std::string tool_call_grammar_key(ToolCallFormat format, const ToolSpec& spec);

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text
};

// One streaming step's output. A tool-call delta carries id and name on the
// first delta of its call and argument fragments after, as OpenAI streams
// them.
struct ToolCallDelta {
  int32_t index = 0;
  std::string id;    // first delta only
  std::string name;  // first delta only
  std::string arguments;
};

struct ToolStreamDelta {
  std::string content;
  std::vector<ToolCallDelta> tool_calls;
  bool empty() const { return content.empty() && tool_calls.empty(); }
};

class ToolCallStreamParser {
 public:
  // Call ids are id_prefix + the call's index. max_calls: calls after that
  // many are dropped (1 without parallel_tool_calls).
  ToolCallStreamParser(ToolCallFormat format, std::string id_prefix, int32_t max_calls = 1 << 20);

  ToolStreamDelta push(std::string_view text);
  // The end of the output: releases held-back text, closes an open call.
  ToolStreamDelta finish();

  int32_t num_calls() const { return num_calls_; }

 private:
  enum class State {
    kStart,    // llama3_json: before the first non-space character
    kContent,  // plain text, watching for the start marker
    kRegion,   // inside a call region, between calls
    kObject,   // inside a call's JSON object
    kDone,     // llama3_json: the output is content from here on
  };
  void run(bool at_end, ToolStreamDelta* d);
  bool step_start(bool at_end, ToolStreamDelta* d);
  bool step_content(bool at_end, ToolStreamDelta* d);
  bool step_region(bool at_end, ToolStreamDelta* d);
  void step_object_byte(char c, ToolStreamDelta* d);
  void begin_object();
  void emit_progress(ToolStreamDelta* d);
  void end_object(bool complete, ToolStreamDelta* d);
  // The literal that starts a call region, or "" (llama3_json).
  std::string_view start_marker() const;

  ToolCallFormat format_;
  std::string id_prefix_;
  int32_t max_calls_;
  State state_;
  std::string buf_;  // unconsumed text (held back or not yet scanned)
  size_t pos_ = 0;
  int32_t num_calls_ = 0;
  bool mistral_array_open_ = false;

  // The current call object.
  struct ObjectScan {
    std::string text;
    int32_t depth = 0;
    bool in_string = false, escaped = false;
    // Top-level key/value tracking.
    bool expect_key = true;
    std::string key;  // raw text of the last top-level key (with quotes)
    bool in_key = false;
    size_t value_start = std::string::npos;  // top-level value of the current key
    std::string value_key;                   // the key that value belongs to
    std::optional<std::string> name;
    size_t args_start = std::string::npos, args_end = std::string::npos;
    bool args_is_string = false;
    size_t args_emitted = 0;  // bytes of the arguments value already sent
    bool announced = false;   // id/name delta sent
    bool dropped = false;     // past max_calls
    int32_t index = -1;
  } obj_;
};

// Non-streaming: the whole output at once.
struct ParsedToolCalls {
  std::string content;
  std::vector<ToolCall> calls;
};
ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text,
                                 const std::string& id_prefix, int32_t max_calls = 1 << 20);
// Assembles streaming deltas the way OpenAI's client does (for tests and
// the e2e check): per index, id and name from the first delta, arguments
// concatenated.
void assemble_tool_deltas(const ToolStreamDelta& d, ParsedToolCalls* into);

}  // namespace strata::server
