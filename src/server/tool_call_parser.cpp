#include "server/tool_call_parser.h"

#include <algorithm>
#include <functional>
#include <set>
#include <utility>

#include "grammar/json_schema_converter.h"
#include "server/json_field.h"

namespace strata::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr size_t kMaxTools = 128;

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

// rest is a proper prefix of marker (could still become it).
bool is_proper_prefix(std::string_view rest, std::string_view marker) {
  return rest.size() < marker.size() && marker.substr(0, rest.size()) == rest;
}

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// Copies src's rules and expressions into dst under `prefix`; returns the
// rule in dst that src's root became.
int32_t import_grammar(Grammar* dst, const Grammar& src, const std::string& prefix) {
  std::vector<int32_t> rule_map(src.num_rules());
  for (int32_t r = 0; r < src.num_rules(); ++r) {
    rule_map[r] = dst->add_rule(prefix + src.rule_name(r));
  }
  std::vector<int32_t> expr_map(src.num_exprs(), -1);
  std::function<int32_t(int32_t)> copy = [&](int32_t id) -> int32_t {
    if (expr_map[id] >= 0) return expr_map[id];
    const Expr& e = src.expr(id);
    std::vector<int32_t> kids;
    for (int32_t c : e.children) kids.push_back(copy(c));
    int32_t out = -1;
    switch (e.kind) {
      case ExprKind::kEmpty:
        out = dst->empty();
        break;
      case ExprKind::kBytes:
        out = dst->bytes(e.bytes);
        break;
      case ExprKind::kCharClass:
        out = dst->char_class(e.ranges);
        break;
      case ExprKind::kSeq:
        out = dst->seq(std::move(kids));
        break;
      case ExprKind::kAlt:
        out = dst->alt(std::move(kids));
        break;
      case ExprKind::kRepeat:
        out = dst->repeat(kids.at(0), e.min, e.max);
        break;
      case ExprKind::kRuleRef:
        out = dst->ref(rule_map[e.rule]);
        break;
      case ExprKind::kAutomaton: {
        Automaton a = src.automaton_at(e.rule);
        for (Automaton::Edge& edge : a.edges) edge.expr = copy(edge.expr);
        out = dst->automaton(std::move(a));
        break;
      }
    }
    expr_map[id] = out;
    return out;
  };
  for (int32_t r = 0; r < src.num_rules(); ++r) {
    if (src.rule_body(r) >= 0) dst->set_body(rule_map[r], copy(src.rule_body(r)));
  }
  return rule_map[src.root()];
}

}  // namespace

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes:
      return "hermes";
    case ToolCallFormat::kLlama3Json:
      return "llama3_json";
    case ToolCallFormat::kMistral:
      return "mistral";
  }
  return "?";
}

Result<ToolCallFormat> tool_call_format_from_name(std::string_view name) {
  if (name == "hermes") return ToolCallFormat::kHermes;
  if (name == "llama3_json") return ToolCallFormat::kLlama3Json;
  if (name == "mistral") return ToolCallFormat::kMistral;
  return invalid_argument("--tool-call-parser: expected hermes, llama3_json or mistral");
}

std::optional<ToolCallFormat> tool_call_format_for_template(std::string_view src) {
  if (src.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (src.find(kMistralMarker) != std::string_view::npos) return ToolCallFormat::kMistral;
  // Llama 3.1+ templates write the call JSON with "parameters" and may
  // prefix it with <|python_tag|>.
  if (src.find(kPythonTag) != std::string_view::npos ||
      (src.find("<|start_header_id|>") != std::string_view::npos &&
       src.find("\"parameters\"") != std::string_view::npos)) {
    return ToolCallFormat::kLlama3Json;
  }
  return std::nullopt;
}

nlohmann::json ToolSpec::to_template_json() const {
  json tools = json::array();
  for (const ToolFunction& f : functions) {
    json fn = {{"name", f.name}};
    if (!f.description.empty()) fn["description"] = f.description;
    fn["parameters"] = f.parameters.empty() ? json::object() : json::parse(f.parameters);
    tools.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return tools;
}

bool is_tool_field(std::string_view key) {
  return key == "tools" || key == "tool_choice" || key == "parallel_tool_calls";
}

std::optional<ApiError> parse_tools(const json& body, std::string_view raw_body,
                                    std::optional<ToolSpec>* out) {
  out->reset();
  ToolSpec spec;
  if (auto e = [&]() -> std::optional<ApiError> {
        const json* p = find_field(body, "parallel_tool_calls");
        if (p == nullptr) return std::nullopt;
        if (!p->is_boolean()) return invalid_param("parallel_tool_calls", "Expected a boolean.");
        spec.parallel = p->get<bool>();
        return std::nullopt;
      }()) {
    return e;
  }
  const json* tools = find_field(body, "tools");
  if (tools != nullptr) {
    if (!tools->is_array()) return invalid_param("tools", "Expected an array of tools.");
    if (tools->size() > kMaxTools) return invalid_param("tools", "Too many tools (at most 128).");
    // Parameter schemas in document order (the grammar generates
    // properties in schema order).
    ordered_json ordered;
    if (!tools->empty()) {
      ordered_json doc = ordered_json::parse(raw_body, nullptr, /*allow_exceptions=*/false);
      if (doc.is_object() && doc.contains("tools")) ordered = doc["tools"];
    }
    std::set<std::string> names;
    for (size_t i = 0; i < tools->size(); ++i) {
      const std::string at = "tools[" + std::to_string(i) + "]";
      const json& t = (*tools)[i];
      if (!t.is_object()) return invalid_param(at, "Each tool must be an object.");
      for (auto it = t.begin(); it != t.end(); ++it) {
        if (it.key() != "type" && it.key() != "function") {
          return invalid_param(at + "." + it.key(), "Unsupported tool field.");
        }
      }
      const json* type = find_field(t, "type");
      if (type == nullptr || *type != "function") {
        return invalid_param(at + ".type", "Only tools of type function are supported.");
      }
      const json* fn = find_field(t, "function");
      if (fn == nullptr || !fn->is_object()) {
        return invalid_param(at + ".function", "Expected an object.");
      }
      for (auto it = fn->begin(); it != fn->end(); ++it) {
        const std::string& k = it.key();
        if (k != "name" && k != "description" && k != "parameters" && k != "strict") {
          return invalid_param(at + ".function." + k, "Unsupported function field.");
        }
      }
      ToolFunction f;
      const json* name = find_field(*fn, "name");
      if (name == nullptr || !name->is_string() ||
          !valid_function_name(name->get_ref<const std::string&>())) {
        return invalid_param(at + ".function.name",
                             "Expected a name of 1-64 characters from a-z, A-Z, 0-9, _ and -.");
      }
      f.name = name->get<std::string>();
      if (!names.insert(f.name).second) {
        return invalid_param(at + ".function.name", "Duplicate function name.");
      }
      if (const json* d = find_field(*fn, "description")) {
        if (!d->is_string())
          return invalid_param(at + ".function.description", "Expected a string.");
        f.description = d->get<std::string>();
      }
      if (const json* s = find_field(*fn, "strict"); s != nullptr && !s->is_boolean()) {
        return invalid_param(at + ".function.strict", "Expected a boolean.");
      }
      if (const json* params = find_field(*fn, "parameters")) {
        if (!params->is_object()) {
          return invalid_param(at + ".function.parameters", "Expected a JSON Schema object.");
        }
        if (ordered.is_array() && i < ordered.size() && ordered[i].is_object() &&
            ordered[i].contains("function") && ordered[i]["function"].is_object() &&
            ordered[i]["function"].contains("parameters")) {
          f.parameters = ordered[i]["function"]["parameters"].dump();
        } else {
          f.parameters = params->dump();
        }
      }
      spec.functions.push_back(std::move(f));
    }
  }

  const json* choice = find_field(body, "tool_choice");
  spec.choice = spec.functions.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (choice != nullptr) {
    if (choice->is_string()) {
      const std::string& c = choice->get_ref<const std::string&>();
      if (c == "none") {
        spec.choice = ToolChoice::kNone;
      } else if (c == "auto") {
        spec.choice = ToolChoice::kAuto;
      } else if (c == "required") {
        spec.choice = ToolChoice::kRequired;
      } else {
        return invalid_param("tool_choice", "Expected none, auto, required or a named function.");
      }
    } else if (choice->is_object()) {
      const json* type = find_field(*choice, "type");
      const json* fn = find_field(*choice, "function");
      const json* name = fn != nullptr && fn->is_object() ? find_field(*fn, "name") : nullptr;
      if (type == nullptr || *type != "function" || name == nullptr || !name->is_string()) {
        return invalid_param("tool_choice",
                             "Expected {\"type\": \"function\", \"function\": {\"name\": ...}}.");
      }
      spec.choice = ToolChoice::kNamed;
      spec.named = name->get<std::string>();
      const bool known = std::any_of(spec.functions.begin(), spec.functions.end(),
                                     [&](const ToolFunction& f) { return f.name == spec.named; });
      if (!known) {
        return invalid_param("tool_choice.function.name", "No tool with that name in tools.");
      }
    } else {
      return invalid_param("tool_choice", "Expected a string or an object.");
    }
    if (spec.functions.empty() && spec.choice != ToolChoice::kNone) {
      return invalid_param("tool_choice", "tool_choice requires tools.");
    }
  }
  if (spec.functions.empty()) return std::nullopt;
  *out = std::move(spec);
  return std::nullopt;
}

Result<Grammar> tool_call_grammar(ToolCallFormat format, const ToolSpec& spec) {
  Grammar g;
  const int32_t root = g.add_rule("root");
  const int32_t call = g.add_rule("call");
  std::vector<int32_t> alts;
  const char* args_key = format == ToolCallFormat::kLlama3Json ? "parameters" : "arguments";
  for (size_t i = 0; i < spec.functions.size(); ++i) {
    const ToolFunction& f = spec.functions[i];
    if (spec.choice == ToolChoice::kNamed && f.name != spec.named) continue;
    Grammar params;
    if (f.parameters.empty()) {
      params = grammar_any_json(/*object_only=*/true);
    } else {
      auto r = grammar_from_json_schema(f.parameters);
      if (!r.is_ok()) {
        return invalid_argument("tools[" + std::to_string(i) +
                                "].function.parameters: " + r.status().message());
      }
      params = std::move(r).value();
    }
    const int32_t params_rule = import_grammar(&g, params, "t" + std::to_string(i) + "_");
    const std::string header = "{\"name\": " + json(f.name).dump() + ", \"" + args_key + "\": ";
    alts.push_back(g.seq({g.bytes(header), g.ref(params_rule), g.bytes("}")}));
  }
  if (alts.empty()) return invalid_argument("tool_choice: no tool to call");
  g.set_body(call, g.alt(std::move(alts)));
  const int32_t one = g.ref(call);
  int32_t body = -1;
  switch (format) {
    case ToolCallFormat::kHermes: {
      auto block = [&] {
        return g.seq({g.bytes(std::string(kHermesOpen) + "\n"), g.ref(call),
                      g.bytes("\n" + std::string(kHermesClose))});
      };
      body = spec.parallel ? g.seq({block(), g.star(g.seq({g.bytes("\n"), block()}))}) : block();
      break;
    }
    case ToolCallFormat::kLlama3Json:
      body = spec.parallel ? g.seq({one, g.star(g.seq({g.bytes("; "), g.ref(call)}))}) : one;
      break;
    case ToolCallFormat::kMistral: {
      std::vector<int32_t> parts = {g.bytes(std::string(kMistralMarker) + "["), one};
      if (spec.parallel) parts.push_back(g.star(g.seq({g.bytes(", "), g.ref(call)})));
      parts.push_back(g.bytes("]"));
      body = g.seq(std::move(parts));
      break;
    }
  }
  g.set_body(root, body);
  g.set_root(root);
  return g;
}

std::string tool_call_grammar_key(ToolCallFormat format, const ToolSpec& spec) {
  json key = {{"format", tool_call_format_name(format)},
              {"choice", static_cast<int>(spec.choice)},
              {"named", spec.named},
              {"parallel", spec.parallel}};
  json fns = json::array();
  for (const ToolFunction& f : spec.functions) fns.push_back({f.name, f.parameters});
  key["functions"] = std::move(fns);
  return key.dump();
}

// ---------------------------------------------------------------------------
// Streaming parser

ToolCallStreamParser::ToolCallStreamParser(ToolCallFormat format, std::string id_prefix,
                                           int32_t max_calls)
    : format_(format),
      id_prefix_(std::move(id_prefix)),
      max_calls_(max_calls),
      state_(format == ToolCallFormat::kLlama3Json ? State::kStart : State::kContent) {}

std::string_view ToolCallStreamParser::start_marker() const {
  switch (format_) {
    case ToolCallFormat::kHermes:
      return kHermesOpen;
    case ToolCallFormat::kMistral:
      return kMistralMarker;
    case ToolCallFormat::kLlama3Json:
      return {};
  }
  return {};
}

ToolStreamDelta ToolCallStreamParser::push(std::string_view text) {
  ToolStreamDelta d;
  buf_.append(text);
  run(/*at_end=*/false, &d);
  return d;
}

ToolStreamDelta ToolCallStreamParser::finish() {
  ToolStreamDelta d;
  run(/*at_end=*/true, &d);
  if (state_ == State::kObject) end_object(/*complete=*/false, &d);
  state_ = State::kDone;
  return d;
}

void ToolCallStreamParser::run(bool at_end, ToolStreamDelta* d) {
  bool progress = true;
  while (progress && pos_ < buf_.size()) {
    switch (state_) {
      case State::kStart:
        progress = step_start(at_end, d);
        break;
      case State::kContent:
        progress = step_content(at_end, d);
        break;
      case State::kRegion:
        progress = step_region(at_end, d);
        break;
      case State::kObject:
        while (pos_ < buf_.size() && state_ == State::kObject) step_object_byte(buf_[pos_++], d);
        if (state_ == State::kObject) emit_progress(d);
        break;
      case State::kDone:
        d->content.append(buf_, pos_, std::string::npos);
        pos_ = buf_.size();
        break;
    }
  }
  buf_.erase(0, pos_);
  pos_ = 0;
}

// llama3_json: leading whitespace is held until the first other character
// says whether the output is a call.
bool ToolCallStreamParser::step_start(bool at_end, ToolStreamDelta* d) {
  size_t i = pos_;
  while (i < buf_.size() && is_space(buf_[i])) ++i;
  if (i == buf_.size()) {
    if (!at_end) return false;
    state_ = State::kDone;
    return true;
  }
  const std::string_view rest = std::string_view(buf_).substr(i);
  if (rest.substr(0, kPythonTag.size()) == kPythonTag) {
    pos_ = i + kPythonTag.size();
    state_ = State::kRegion;
    return true;
  }
  if (is_proper_prefix(rest, kPythonTag) && !at_end) return false;
  if (rest[0] == '{') {
    pos_ = i;
    state_ = State::kRegion;
    return true;
  }
  (void)d;
  state_ = State::kDone;
  return true;
}

bool ToolCallStreamParser::step_content(bool at_end, ToolStreamDelta* d) {
  const std::string_view marker = start_marker();
  while (pos_ < buf_.size()) {
    const size_t idx = buf_.find(marker[0], pos_);
    if (idx == std::string::npos) {
      d->content.append(buf_, pos_, std::string::npos);
      pos_ = buf_.size();
      return true;
    }
    d->content.append(buf_, pos_, idx - pos_);
    pos_ = idx;
    const std::string_view rest = std::string_view(buf_).substr(idx);
    if (rest.substr(0, marker.size()) == marker) {
      pos_ += marker.size();
      state_ = State::kRegion;
      mistral_array_open_ = false;
      return true;
    }
    if (is_proper_prefix(rest, marker)) {
      if (!at_end) return false;  // held back: it may still become the marker
      d->content.append(rest);
      pos_ = buf_.size();
      return true;
    }
    d->content.push_back(buf_[pos_++]);
  }
  return true;
}

bool ToolCallStreamParser::step_region(bool at_end, ToolStreamDelta* d) {
  while (pos_ < buf_.size()) {
    const char c = buf_[pos_];
    if (is_space(c)) {
      ++pos_;
      continue;
    }
    switch (format_) {
      case ToolCallFormat::kHermes: {
        const std::string_view rest = std::string_view(buf_).substr(pos_);
        if (rest.substr(0, kHermesClose.size()) == kHermesClose) {
          pos_ += kHermesClose.size();
          state_ = State::kContent;
          return true;
        }
        if (is_proper_prefix(rest, kHermesClose) && !at_end) return false;
        if (c == '{') {
          begin_object();
          return true;
        }
        ++pos_;  // malformed text inside the block
        break;
      }
      case ToolCallFormat::kMistral:
        if (!mistral_array_open_) {
          if (c == '[') {
            mistral_array_open_ = true;
            ++pos_;
          } else {
            state_ = State::kContent;
            return true;
          }
        } else if (c == '{') {
          begin_object();
          return true;
        } else if (c == ']') {
          mistral_array_open_ = false;
          state_ = State::kContent;
          ++pos_;
          return true;
        } else {
          ++pos_;  // ',' between calls, or malformed text
        }
        break;
      case ToolCallFormat::kLlama3Json:
        if (c == ';') {
          ++pos_;
        } else if (c == '{') {
          begin_object();
          return true;
        } else {
          state_ = State::kDone;
          return true;
        }
        break;
    }
  }
  (void)d;
  return true;
}

void ToolCallStreamParser::begin_object() {
  obj_ = ObjectScan{};
  state_ = State::kObject;
}

void ToolCallStreamParser::step_object_byte(char c, ToolStreamDelta* d) {
  ObjectScan& o = obj_;
  o.text.push_back(c);
  const size_t i = o.text.size() - 1;
  // Values of top-level keys: where the value of the current key began and
  // whether it is a string, container or scalar (its end is found here).
  auto finish_value = [&](size_t end) {
    if (o.value_start == std::string::npos) return;
    const std::string value = o.text.substr(o.value_start, end - o.value_start);
    if (o.value_key == "\"name\"" && !o.name && value.size() >= 2 && value[0] == '"') {
      json n = json::parse(value, nullptr, false);
      // An empty name names no function: the object stays content.
      if (n.is_string() && !n.get_ref<const std::string&>().empty()) o.name = n.get<std::string>();
    } else if ((o.value_key == "\"arguments\"" || o.value_key == "\"parameters\"") &&
               (o.args_start == std::string::npos || o.args_start == o.value_start) &&
               o.args_end == std::string::npos) {
      o.args_start = o.value_start;
      o.args_end = end;
      o.args_is_string = value[0] == '"';
    }
    o.value_start = std::string::npos;
    o.value_key.clear();
  };
  const bool awaiting_value = o.depth == 1 && !o.expect_key && o.value_start == std::string::npos;
  const bool scalar_open = o.depth == 1 && o.value_start != std::string::npos &&
                           o.text[o.value_start] != '"' && o.text[o.value_start] != '{' &&
                           o.text[o.value_start] != '[';
  if (o.in_string) {
    if (o.in_key) o.key.push_back(c);
    if (o.escaped) {
      o.escaped = false;
    } else if (c == '\\') {
      o.escaped = true;
    } else if (c == '"') {
      o.in_string = false;
      if (o.depth == 1 && o.in_key) {
        o.in_key = false;
      } else if (o.depth == 1 && o.value_start != std::string::npos &&
                 o.text[o.value_start] == '"') {
        finish_value(i + 1);
      }
    }
    return;
  }
  if (scalar_open && (c == ',' || c == '}' || is_space(c))) finish_value(i);
  switch (c) {
    case '"':
      o.in_string = true;
      if (o.depth == 1 && o.expect_key) {
        o.in_key = true;
        o.key = "\"";
      } else if (awaiting_value) {
        o.value_start = i;
        o.value_key = o.key;
      }
      break;
    case '{':
    case '[':
      if (awaiting_value) {
        o.value_start = i;
        o.value_key = o.key;
        if ((o.key == "\"arguments\"" || o.key == "\"parameters\"") &&
            o.args_start == std::string::npos) {
          o.args_start = i;  // streamed while it is generated
        }
      }
      ++o.depth;
      break;
    case '}':
    case ']':
      --o.depth;
      if (o.depth == 1 && o.value_start != std::string::npos) finish_value(i + 1);
      if (o.depth <= 0) {
        end_object(/*complete=*/true, d);
        state_ = State::kRegion;
      }
      break;
    case ':':
      if (o.depth == 1) o.expect_key = false;
      break;
    case ',':
      if (o.depth == 1) o.expect_key = true;
      break;
    default:
      if (awaiting_value && !is_space(c)) {
        o.value_start = i;
        o.value_key = o.key;
      }
      break;
  }
}

void ToolCallStreamParser::emit_progress(ToolStreamDelta* d) {
  ObjectScan& o = obj_;
  if (o.dropped || !o.name) return;
  auto delta_for = [&]() -> ToolCallDelta& {
    if (d->tool_calls.empty() || d->tool_calls.back().index != o.index) {
      ToolCallDelta nd;
      nd.index = o.index;
      d->tool_calls.push_back(std::move(nd));
    }
    return d->tool_calls.back();
  };
  if (!o.announced) {
    o.announced = true;
    if (num_calls_ >= max_calls_) {
      o.dropped = true;
      return;
    }
    o.index = num_calls_++;
    ToolCallDelta& nd = delta_for();
    nd.id = id_prefix_ + std::to_string(o.index);
    nd.name = *o.name;
  }
  if (o.args_start == std::string::npos || o.args_is_string) return;
  const size_t end = o.args_end != std::string::npos ? o.args_end : o.text.size();
  if (end > o.args_start + o.args_emitted) {
    delta_for().arguments.append(o.text, o.args_start + o.args_emitted,
                                 end - o.args_start - o.args_emitted);
    o.args_emitted = end - o.args_start;
  }
}

void ToolCallStreamParser::end_object(bool complete, ToolStreamDelta* d) {
  ObjectScan& o = obj_;
  (void)complete;
  if (!o.name) {
    // Not a call after all (no "name"): the text goes back to the content.
    d->content.append(o.text);
    return;
  }
  emit_progress(d);
  if (o.dropped) return;
  auto delta = [&](std::string args) {
    if (d->tool_calls.empty() || d->tool_calls.back().index != o.index) {
      ToolCallDelta nd;
      nd.index = o.index;
      d->tool_calls.push_back(std::move(nd));
    }
    d->tool_calls.back().arguments += args;
  };
  if (o.args_start == std::string::npos) {
    delta("{}");
  } else if (o.args_is_string && o.args_end != std::string::npos) {
    json s = json::parse(o.text.substr(o.args_start, o.args_end - o.args_start), nullptr, false);
    delta(s.is_string() ? s.get<std::string>() : std::string());
  }
}

void assemble_tool_deltas(const ToolStreamDelta& d, ParsedToolCalls* into) {
  into->content += d.content;
  for (const ToolCallDelta& t : d.tool_calls) {
    if (t.index >= static_cast<int32_t>(into->calls.size())) {
      into->calls.resize(t.index + 1);
    }
    ToolCall& c = into->calls[t.index];
    if (!t.id.empty()) c.id = t.id;
    if (!t.name.empty()) c.name = t.name;
    c.arguments += t.arguments;
  }
}

ParsedToolCalls parse_tool_calls(ToolCallFormat format, std::string_view text,
                                 const std::string& id_prefix, int32_t max_calls) {
  ToolCallStreamParser parser(format, id_prefix, max_calls);
  ParsedToolCalls out;
  assemble_tool_deltas(parser.push(text), &out);
  assemble_tool_deltas(parser.finish(), &out);
  return out;
}

}  // namespace strata::server
