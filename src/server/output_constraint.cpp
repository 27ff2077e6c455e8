#include "server/output_constraint.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace strata::server {
namespace {

using nlohmann::json;

bool all_space(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; });
}

}  // namespace

std::optional<ApiError> prepare_output_constraint(
    const json& body, std::string_view raw_body, bool is_chat,
    const std::shared_ptr<StructuredOutputCompiler>& compiler, ToolCallFormat format,
    OutputConstraint* out) {
  *out = OutputConstraint{};
  if (auto e = parse_structured_output(body, raw_body, &out->structured)) return e;
  if (is_chat) {
    if (auto e = parse_tools(body, raw_body, &out->tools)) return e;
  }
  out->tool_format = format;
  const bool tools_constrained = out->tools && out->tools->constrained();
  if (out->structured && tools_constrained) {
    return invalid_param("tool_choice", "tool_choice " +
                                            std::string(out->tools->choice == ToolChoice::kNamed
                                                            ? "naming a function"
                                                            : "required") +
                                            " cannot be combined with " + out->structured->param +
                                            " (both constrain the whole output).");
  }
  if (!out->structured && !tools_constrained) return std::nullopt;
  if (compiler == nullptr) return internal_error("structured outputs are not set up");
  out->compiler = compiler;
  if (out->structured) {
    out->grammar_kind = out->structured->spec.kind;
    out->grammar_param = out->structured->param;
    return compiler->compile(*out->structured, &out->grammar);
  }
  const ToolSpec& spec = *out->tools;
  out->grammar_kind = GrammarKind::kGbnf;  // checked as a grammar, not as JSON
  out->grammar_param = "tools";
  return compiler->compile_keyed(
      tool_call_grammar_key(format, spec), [&] { return tool_call_grammar(format, spec); }, "tools",
      &out->grammar);
}

Result<ToolCallFormat> resolve_tool_call_format(std::string_view flag,
                                                std::string_view template_source) {
  if (!flag.empty()) return tool_call_format_from_name(flag);
  return tool_call_format_for_template(template_source).value_or(ToolCallFormat::kHermes);
}

std::string structured_output_metrics_text(const StructuredOutputCompiler* compiler,
                                           std::string_view model_name) {
  const uint64_t v = compiler != nullptr ? compiler->num_violations() : 0;
  std::string label;
  if (!model_name.empty()) {
    std::string escaped;
    for (char c : model_name) {
      if (c == '\\' || c == '"') escaped.push_back('\\');
      if (c == '\n') {
        escaped += "\\n";
        continue;
      }
      escaped.push_back(c);
    }
    label = "{model_name=\"" + escaped + "\"}";
  }
  return "# HELP strata_structured_output_violations_total Constrained outputs the grammar ended "
         "that failed the post-generation check (should stay 0).\n"
         "# TYPE strata_structured_output_violations_total counter\n"
         "strata_structured_output_violations_total" +
         label + " " + std::to_string(v) + "\n";
}

ChoiceOutput::ChoiceOutput(std::shared_ptr<const OutputConstraint> constraint,
                           std::string call_id_prefix)
    : c_(std::move(constraint)) {
  // With a response format the output is that format, never a call (a
  // llama3_json parser would take {"name": ...} for one).
  if (c_ && c_->parses_tool_calls() && !c_->structured) {
    const int32_t max_calls = c_->tools->parallel ? (1 << 20) : 1;
    parser_ = std::make_unique<ToolCallStreamParser>(c_->tool_format, std::move(call_id_prefix),
                                                     max_calls);
  }
}

// Whitespace-only content next to calls (the newline between two Hermes
// blocks) is held, then sent before the next other content, or dropped at
// the end when a call was made; so streamed and whole responses agree.
ToolStreamDelta ChoiceOutput::filter(ToolStreamDelta d, bool is_final) {
  num_calls_ = parser_ ? parser_->num_calls() : 0;
  std::string content = std::move(held_space_);
  held_space_.clear();
  content += d.content;
  size_t keep = content.size();
  while (keep > 0 && all_space(std::string_view(content).substr(keep - 1, 1))) --keep;
  held_space_ = content.substr(keep);
  content.resize(keep);
  if (is_final) {
    if (num_calls_ == 0) content += held_space_;
    held_space_.clear();
  }
  d.content = std::move(content);
  return d;
}

json ChoiceOutput::delta_json(const ToolStreamDelta& d) {
  json delta = json::object();
  if (!d.content.empty()) delta["content"] = d.content;
  if (!d.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCallDelta& t : d.tool_calls) {
      json call{{"index", t.index}};
      json fn = json::object();
      if (!t.id.empty()) {
        call["id"] = t.id;
        call["type"] = "function";
        fn["name"] = t.name;
      }
      fn["arguments"] = t.arguments;
      call["function"] = std::move(fn);
      calls.push_back(std::move(call));
    }
    delta["tool_calls"] = std::move(calls);
  }
  return delta;
}

json ChoiceOutput::stream_delta(std::string_view text, bool is_final) {
  if (!parser_) {
    if (text.empty()) return json();
    return json{{"content", std::string(text)}};
  }
  ToolStreamDelta d = parser_->push(text);
  if (is_final) {
    ToolStreamDelta end = parser_->finish();
    d.content += end.content;
    d.tool_calls.insert(d.tool_calls.end(), end.tool_calls.begin(), end.tool_calls.end());
  }
  d = filter(std::move(d), is_final);
  if (d.empty()) return json();
  return delta_json(d);
}

json ChoiceOutput::message(std::string_view text) {
  if (!parser_) return json{{"role", "assistant"}, {"content", std::string(text)}};
  ParsedToolCalls parsed;
  assemble_tool_deltas(filter(parser_->push(text), false), &parsed);
  assemble_tool_deltas(filter(parser_->finish(), true), &parsed);
  json msg{{"role", "assistant"}};
  msg["content"] = parsed.calls.empty() || !parsed.content.empty() ? json(parsed.content) : json();
  if (!parsed.calls.empty()) {
    json calls = json::array();
    for (const ToolCall& t : parsed.calls) {
      calls.push_back({{"id", t.id},
                       {"type", "function"},
                       {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
    }
    msg["tool_calls"] = std::move(calls);
  }
  return msg;
}

const char* ChoiceOutput::finish_reason(FinishReason reason) const {
  if (reason == FinishReason::kStop && num_calls_ > 0) return "tool_calls";
  return finish_reason_name(reason);
}

bool ChoiceOutput::check(std::string_view text, FinishReason reason, bool stopped_by_user) {
  if (!c_ || !c_->grammar || !c_->compiler) return true;
  // Only an output the grammar ended is complete; max_tokens (length), a
  // stop string or a stop token cut it wherever they fall.
  if (reason != FinishReason::kStop || stopped_by_user) return true;
  StructuredOutput so;
  so.spec.kind = c_->grammar_kind;
  so.param = c_->grammar_param;
  Status s = c_->compiler->check_output(so, *c_->grammar, text);
  if (!s.is_ok()) {
    std::fprintf(stderr, "[serve] structured output violation (%s): %s\n", so.param.c_str(),
                 s.message().c_str());
    return false;
  }
  return true;
}

}  // namespace strata::server
