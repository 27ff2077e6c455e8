// OutputConstraint: what a generation request asks of its output's shape,
// between the HTTP body and the response: the structured-output constraint
// and the tools, the grammar the engine masks with (GenerationRequest::
// grammar), and, per choice, the tool-call parser and the post-generation
// check (ChoiceOutput). The server and GenerationCall each call into this
// with a line or two; the logic lives here.
//
//   response_format / structured_outputs / guided_*   -> a grammar; the
//       finished output is re-checked against it (a violation is counted
//       in /metrics as strata_structured_output_violations_total).
//   tools + tool_choice auto      -> no grammar; the output is parsed for
//       calls (finish_reason tool_calls, message.tool_calls, deltas).
//   tools + required / named      -> the tool-call grammar, and parsed.
//   a structured output together with required/named tools -> 400 (two
//       constraints on one output).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "sched/request.h"
#include "server/api_error.h"
#include "server/structured_output.h"
#include "server/tool_call_parser.h"

namespace strata::server {

struct OutputConstraint {
  std::optional<StructuredOutput> structured;
  std::optional<ToolSpec> tools;
  ToolCallFormat tool_format = ToolCallFormat::kHermes;
  // What the engine masks with (null: free text).
  std::shared_ptr<const TokenMaskCache> grammar;
  GrammarKind grammar_kind = GrammarKind::kGbnf;
  std::string grammar_param;  // the field the grammar came from
  // Checks finished outputs and counts violations (null without a grammar).
  std::shared_ptr<StructuredOutputCompiler> compiler;

  bool parses_tool_calls() const { return tools && tools->parses_calls(); }
};

// Parses the constraint fields of `body` (raw_body: its text) and compiles
// the grammar. `compiler` is the server's (one per vocabulary); `format`
// the tool-call syntax (template or --tool-call-parser). Tools are read
// for chat only (the completions protocol has none).
std::optional<ApiError> prepare_output_constraint(
    const nlohmann::json& body, std::string_view raw_body, bool is_chat,
    const std::shared_ptr<StructuredOutputCompiler>& compiler, ToolCallFormat format,
    OutputConstraint* out);

// The server's tool-call syntax: --tool-call-parser when given (empty:
// none), else what the chat template shows, else hermes.
Result<ToolCallFormat> resolve_tool_call_format(std::string_view flag,
                                                std::string_view template_source);

// /metrics lines for the post-generation check (Prometheus text, counter
// strata_structured_output_violations_total), appended to the engine's.
std::string structured_output_metrics_text(const StructuredOutputCompiler* compiler,
                                           std::string_view model_name);

// One choice's output through the constraint: tool-call parsing (streamed
// as OpenAI deltas, whitespace-only content around calls dropped) and the
// post-generation check. Not thread-safe (one per choice, used by the
// call's pump thread).
class ChoiceOutput {
 public:
  ChoiceOutput(std::shared_ptr<const OutputConstraint> constraint, std::string call_id_prefix);

  // Streaming chat: the `delta` object for the next text (and, when final,
  // the end of the output); null when there is nothing to send.
  nlohmann::json stream_delta(std::string_view text, bool is_final);
  // Non-streaming chat: `message` for the whole text.
  nlohmann::json message(std::string_view text);
  // The finish_reason to report: tool_calls when a call was made and the
  // model stopped on its own.
  const char* finish_reason(FinishReason reason) const;
  // Called once with the whole output text when the choice ends; checks it
  // against the grammar when the grammar (not a stop string, stop token or
  // max_tokens) ended it. Returns false on a violation (counted, logged).
  bool check(std::string_view text, FinishReason reason, bool stopped_by_user);

  bool parses_tool_calls() const { return parser_ != nullptr; }

 private:
  ToolStreamDelta filter(ToolStreamDelta d, bool is_final);
  static nlohmann::json delta_json(const ToolStreamDelta& d);

  std::shared_ptr<const OutputConstraint> c_;
  std::unique_ptr<ToolCallStreamParser> parser_;
  std::string held_space_;  // trailing whitespace of the content, not yet sent
  int32_t num_calls_ = 0;
};

}  // namespace strata::server
