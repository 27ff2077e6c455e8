#include "server/structured_output.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "server/json_field.h"

namespace strata::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::array<std::string_view, 8> kFields = {
    "response_format",
    "structured_outputs",
    "guided_json",
    "guided_regex",
    "guided_choice",
    "guided_grammar",
    "guided_decoding_backend",
    "guided_whitespace_pattern",
};

// The schema at `path` (object keys from the body's root) in document order,
// serialized. The body was already parsed once, so this parse succeeds; the
// fallback keeps the sorted form rather than fail.
std::string schema_text_in_order(std::string_view raw_body, const std::vector<std::string>& path,
                                 const json& sorted) {
  ordered_json doc = ordered_json::parse(raw_body, nullptr, /*allow_exceptions=*/false);
  const ordered_json* at = &doc;
  for (const std::string& key : path) {
    if (at->is_discarded() || !at->is_object()) return sorted.dump();
    auto it = at->find(key);
    if (it == at->end()) return sorted.dump();
    at = &*it;
  }
  return at->dump();
}

// A schema given as an object (or a boolean schema) or as JSON text.
std::optional<ApiError> schema_spec(const json& v, const std::string& param,
                                    std::string_view raw_body, const std::vector<std::string>& path,
                                    GrammarSpec* out) {
  out->kind = GrammarKind::kJsonSchema;
  if (v.is_string()) {
    out->text = v.get<std::string>();
  } else if (v.is_object() || v.is_boolean()) {
    out->text = schema_text_in_order(raw_body, path, v);
  } else {
    return invalid_param(param, "Expected a JSON Schema (an object or JSON text).");
  }
  return std::nullopt;
}

std::optional<ApiError> string_spec(const json& v, const std::string& param, GrammarKind kind,
                                    GrammarSpec* out) {
  if (!v.is_string()) return invalid_param(param, "Expected a string.");
  if (v.get_ref<const std::string&>().empty()) return invalid_param(param, "Must not be empty.");
  out->kind = kind;
  out->text = v.get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> choice_spec(const json& v, const std::string& param, GrammarSpec* out) {
  if (!v.is_array() || v.empty()) {
    return invalid_param(param, "Expected a non-empty array of strings.");
  }
  for (const json& c : v) {
    if (!c.is_string()) return invalid_param(param, "Every choice must be a string.");
  }
  out->kind = GrammarKind::kChoice;
  out->text = v.dump();
  return std::nullopt;
}

std::optional<ApiError> parse_response_format(const json& rf, std::string_view raw_body,
                                              std::optional<StructuredOutput>* out) {
  if (!rf.is_object()) return invalid_param("response_format", "Expected an object.");
  const json* type = find_field(rf, "type");
  if (type == nullptr || !type->is_string()) {
    return invalid_param("response_format.type", "Expected one of text, json_object, json_schema.");
  }
  const std::string& t = type->get_ref<const std::string&>();
  for (auto it = rf.begin(); it != rf.end(); ++it) {
    const bool known = it.key() == "type" || (t == "json_schema" && it.key() == "json_schema");
    if (!known) {
      return invalid_param("response_format." + it.key(),
                           "Unsupported field for response_format type " + t + ".");
    }
  }
  if (t == "text") return std::nullopt;
  StructuredOutput so;
  so.param = "response_format";
  if (t == "json_object") {
    so.spec.kind = GrammarKind::kJsonObject;
    *out = std::move(so);
    return std::nullopt;
  }
  if (t != "json_schema") {
    return invalid_param("response_format.type", "Expected one of text, json_object, json_schema.");
  }
  const json* js = find_field(rf, "json_schema");
  if (js == nullptr || !js->is_object()) {
    return invalid_param("response_format.json_schema", "json_schema (an object) is required.");
  }
  for (auto it = js->begin(); it != js->end(); ++it) {
    const std::string& k = it.key();
    if (k != "name" && k != "description" && k != "schema" && k != "strict") {
      return invalid_param("response_format.json_schema." + k, "Unsupported field.");
    }
  }
  if (const json* name = find_field(*js, "name"); name != nullptr && !name->is_string()) {
    return invalid_param("response_format.json_schema.name", "Expected a string.");
  }
  // strict true and false are both served fully constrained: a strict
  // grammar's outputs are a subset of what non-strict allows.
  if (const json* strict = find_field(*js, "strict"); strict != nullptr && !strict->is_boolean()) {
    return invalid_param("response_format.json_schema.strict", "Expected a boolean.");
  }
  const json* schema = find_field(*js, "schema");
  if (schema == nullptr) {
    // OpenAI makes the schema optional; without one any JSON object is valid.
    so.spec.kind = GrammarKind::kJsonObject;
  } else if (auto e = schema_spec(*schema, "response_format.json_schema.schema", raw_body,
                                  {"response_format", "json_schema", "schema"}, &so.spec)) {
    return e;
  }
  *out = std::move(so);
  return std::nullopt;
}

std::optional<ApiError> parse_vllm_object(const json& so_obj, std::string_view raw_body,
                                          std::optional<StructuredOutput>* out) {
  if (!so_obj.is_object()) return invalid_param("structured_outputs", "Expected an object.");
  StructuredOutput so;
  int count = 0;
  for (auto it = so_obj.begin(); it != so_obj.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    const std::string param = "structured_outputs." + k;
    if (v.is_null()) continue;
    std::optional<ApiError> e;
    if (k == "json") {
      e = schema_spec(v, param, raw_body, {"structured_outputs", "json"}, &so.spec);
    } else if (k == "regex") {
      e = string_spec(v, param, GrammarKind::kRegex, &so.spec);
    } else if (k == "choice") {
      e = choice_spec(v, param, &so.spec);
    } else if (k == "grammar") {
      e = string_spec(v, param, GrammarKind::kGbnf, &so.spec);
    } else if (k == "json_object") {
      if (!v.is_boolean()) return invalid_param(param, "Expected a boolean.");
      if (!v.get<bool>()) continue;
      so.spec.kind = GrammarKind::kJsonObject;
    } else {
      return invalid_param(param, "Unsupported structured_outputs field.");
    }
    if (e) return e;
    so.param = param;
    ++count;
  }
  if (count > 1) {
    return invalid_param("structured_outputs",
                         "Only one of json, regex, choice, grammar, json_object may be given.");
  }
  if (count == 1) *out = std::move(so);
  return std::nullopt;
}

}  // namespace

bool is_structured_output_field(std::string_view key) {
  for (std::string_view f : kFields) {
    if (f == key) return true;
  }
  return false;
}

std::optional<ApiError> parse_structured_output(const json& body, std::string_view raw_body,
                                                std::optional<StructuredOutput>* out) {
  out->reset();
  std::vector<StructuredOutput> found;
  std::optional<StructuredOutput> one;

  if (const json* rf = find_field(body, "response_format")) {
    if (auto e = parse_response_format(*rf, raw_body, &one)) return e;
    if (one) found.push_back(std::move(*one));
  }
  if (const json* so = find_field(body, "structured_outputs")) {
    one.reset();
    if (auto e = parse_vllm_object(*so, raw_body, &one)) return e;
    if (one) found.push_back(std::move(*one));
  }
  struct Guided {
    const char* key;
    GrammarKind kind;
  };
  for (const Guided g :
       {Guided{"guided_json", GrammarKind::kJsonSchema},
        Guided{"guided_regex", GrammarKind::kRegex}, Guided{"guided_choice", GrammarKind::kChoice},
        Guided{"guided_grammar", GrammarKind::kGbnf}}) {
    const json* v = find_field(body, g.key);
    if (v == nullptr) continue;
    StructuredOutput so;
    so.param = g.key;
    std::optional<ApiError> e;
    if (g.kind == GrammarKind::kJsonSchema) {
      e = schema_spec(*v, g.key, raw_body, {g.key}, &so.spec);
    } else if (g.kind == GrammarKind::kChoice) {
      e = choice_spec(*v, g.key, &so.spec);
    } else {
      e = string_spec(*v, g.key, g.kind, &so.spec);
    }
    if (e) return e;
    found.push_back(std::move(so));
  }
  if (const json* b = find_field(body, "guided_decoding_backend");
      b != nullptr && !b->is_string()) {
    return invalid_param("guided_decoding_backend", "Expected a string.");
  }
  if (find_field(body, "guided_whitespace_pattern") != nullptr) {
    // Whitespace is fixed and bounded by the grammar engine.
    return invalid_param("guided_whitespace_pattern",
                         "guided_whitespace_pattern is not supported.");
  }
  if (found.size() > 1) {
    return invalid_param(found[1].param, "Only one output constraint per request (also given: " +
                                             found[0].param + ").");
  }
  if (!found.empty()) *out = std::move(found[0]);
  return std::nullopt;
}

StructuredOutputCompiler::StructuredOutputCompiler(std::shared_ptr<const TokenTrie> trie,
                                                   GrammarCache::Options options)
    : cache_(std::move(trie), options), max_keyed_(std::max<size_t>(1, options.max_entries)) {}

std::optional<ApiError> StructuredOutputCompiler::compile_keyed(
    const std::string& key, const std::function<Result<Grammar>()>& build, const std::string& param,
    std::shared_ptr<const TokenMaskCache>* out) {
  {
    std::lock_guard<std::mutex> lock(keyed_mu_);
    auto it = keyed_.find(key);
    if (it != keyed_.end()) {
      *out = it->second;
      return std::nullopt;
    }
  }
  Result<Grammar> g = build();
  if (!g.is_ok()) return invalid_param(param, g.status().message());
  auto compiled = CompiledGrammar::compile(g.value());
  if (!compiled.is_ok()) return invalid_param(param, compiled.status().message());
  auto cache = std::make_shared<const TokenMaskCache>(std::move(compiled).value(), cache_.trie());
  std::lock_guard<std::mutex> lock(keyed_mu_);
  auto [it, inserted] = keyed_.emplace(key, cache);
  if (inserted) {
    keyed_order_.push_back(key);
    while (keyed_order_.size() > max_keyed_) {
      keyed_.erase(keyed_order_.front());
      keyed_order_.pop_front();
    }
  }
  *out = it->second;
  return std::nullopt;
}

std::optional<ApiError> StructuredOutputCompiler::compile(
    const StructuredOutput& constraint, std::shared_ptr<const TokenMaskCache>* out) {
  return compile_spec(constraint.spec, constraint.param, out);
}

std::optional<ApiError> StructuredOutputCompiler::compile_spec(
    const GrammarSpec& spec, const std::string& param, std::shared_ptr<const TokenMaskCache>* out) {
  auto r = cache_.get(spec);
  if (!r.is_ok()) {
    // The grammar engine's messages name the keyword and its JSON path (or
    // the regex offset, the GBNF line:column); they are strata's own text.
    return invalid_param(param, "Invalid " + std::string(grammar_kind_name(spec.kind)) + ": " +
                                    r.status().message());
  }
  *out = std::move(r).value();
  return std::nullopt;
}

Status output_satisfies_grammar(GrammarKind kind, const TokenMaskCache& grammar,
                                std::string_view text) {
  // A matcher needs its own shared_ptr; the check borrows the caller's
  // cache through an aliasing pointer that owns nothing.
  std::shared_ptr<const TokenMaskCache> borrowed(std::shared_ptr<const TokenMaskCache>(), &grammar);
  GrammarMatcher matcher(borrowed);
  if (!matcher.accept_bytes(text)) {
    return invalid_argument("output leaves the grammar");
  }
  if (!matcher.can_terminate() && !matcher.is_terminated()) {
    return invalid_argument("output ends inside the grammar (incomplete)");
  }
  if (kind == GrammarKind::kJsonSchema || kind == GrammarKind::kJsonObject ||
      kind == GrammarKind::kJsonValue) {
    const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return invalid_argument("output is not valid JSON");
    if (kind == GrammarKind::kJsonObject && !j.is_object()) {
      return invalid_argument("output is not a JSON object");
    }
  }
  return Status::ok();
}

Status StructuredOutputCompiler::check_output(const StructuredOutput& constraint,
                                              const TokenMaskCache& grammar,
                                              std::string_view text) {
  Status s = output_satisfies_grammar(constraint.spec.kind, grammar, text);
  if (!s.is_ok()) {
    violations_.fetch_add(1, std::memory_order_relaxed);
    if (hook_) hook_(constraint.param, s.message());
  }
  return s;
}

Status StructuredOutputCompiler::check_output(GrammarKind kind, const TokenMaskCache& grammar,
                                              std::string_view text) {
  StructuredOutput c;
  c.spec.kind = kind;
  c.param = grammar_kind_name(kind);
  return check_output(c, grammar, text);
}

void StructuredOutputCompiler::set_violation_hook(
    std::function<void(const std::string&, const std::string&)> hook) {
  hook_ = std::move(hook);
}

}  // namespace strata::server
