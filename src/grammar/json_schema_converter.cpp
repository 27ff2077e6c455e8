#include "grammar/json_schema_converter.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "grammar/regex_parser.h"

namespace strata {

namespace {

using json = nlohmann::ordered_json;

const std::set<std::string> kAnnotations = {"$schema",  "$id",      "title",    "description",
                                            "default",  "examples", "$comment", "deprecated",
                                            "readOnly", "writeOnly"};
const std::set<std::string> kKeywords = {"$ref",
                                         "$defs",
                                         "definitions",
                                         "type",
                                         "enum",
                                         "const",
                                         "anyOf",
                                         "oneOf",
                                         "allOf",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "items",
                                         "prefixItems",
                                         "minItems",
                                         "maxItems",
                                         "minLength",
                                         "maxLength",
                                         "pattern",
                                         "format",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum"};
const std::vector<std::string> kAllTypes = {"null",   "boolean", "object", "array",
                                            "string", "number",  "integer"};

constexpr int64_t kMaxInt = 999999999999999999;  // 18 digits

std::string child_path(const std::string& path, const std::string& key) {
  bool plain = !key.empty();
  for (char c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '$') plain = false;
  return plain ? path + "." + key : path + "[" + json(key).dump() + "]";
}
std::string index_path(const std::string& path, const std::string& key, size_t i) {
  return child_path(path, key) + "[" + std::to_string(i) + "]";
}

Status unsupported(const std::string& keyword, const std::string& path,
                   const std::string& why = "") {
  return invalid_argument("unsupported JSON Schema keyword '" + keyword + "' at " + path +
                          (why.empty() ? "" : " (" + why + ")"));
}
Status bad_schema(const std::string& path, const std::string& what) {
  return invalid_argument("invalid JSON Schema at " + path + ": " + what);
}

// Regexes for the supported formats (ASCII, always valid by RFC 3339 /
// Python's checkers: days never exceed their month; Feb 29 is left out).
const char* format_regex(const std::string& f) {
  static const std::string kDate =
      R"(\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\d|3[01])|(0[469]|11)-(0[1-9]|[12]\d|30)|02-(0[1-9]|1\d|2[0-8])))";
  static const std::string kTime =
      R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
  static const std::string kDateTime = kDate + "T" + kTime;
  static const std::string kUuid =
      R"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})";
  static const std::string kEmail =
      R"([a-z0-9]([a-z0-9._+-]{0,30}[a-z0-9])?@[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?){0,3}\.[a-z]{2,8})";
  static const std::string kIpv4 =
      R"((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})";
  if (f == "date") return kDate.c_str();
  if (f == "time") return kTime.c_str();
  if (f == "date-time") return kDateTime.c_str();
  if (f == "uuid") return kUuid.c_str();
  if (f == "email") return kEmail.c_str();
  if (f == "ipv4") return kIpv4.c_str();
  return nullptr;
}

std::set<std::string> type_set(const json& s) {
  std::set<std::string> out;
  if (!s.is_object() || !s.contains("type")) {
    out.insert(kAllTypes.begin(), kAllTypes.end());
    return out;
  }
  const json& t = s["type"];
  if (t.is_string()) out.insert(t.get<std::string>());
  if (t.is_array())
    for (const auto& x : t)
      if (x.is_string()) out.insert(x.get<std::string>());
  return out;
}

bool value_has_type(const json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                     std::floor(v.get<double>()) == v.get<double>());
  return false;
}

class Converter {
 public:
  Converter(const json& root, const JsonSchemaOptions& o) : root_(root), opt_(o) {}

  Result<Grammar> run() {
    setup();
    const int32_t root = g_.add_rule("root");
    STRATA_ASSIGN_OR_RETURN(int32_t body, value(root_, "$", 0));
    g_.set_body(root, body);
    g_.set_root(root);
    return std::move(g_);
  }

  Grammar any(bool object_only) {
    setup();
    const int32_t root = g_.add_rule("root");
    g_.set_body(root, object_only ? any_object_expr() : g_.ref(any_value_rule()));
    g_.set_root(root);
    return std::move(g_);
  }

 private:
  void setup() {
    std::vector<int32_t> ws_alts = {g_.empty(), g_.bytes(" ")};
    ws_alts.push_back(g_.seq({g_.bytes("\n"), g_.repeat(g_.bytes(" "), 0, opt_.max_indent)}));
    ws_ = g_.alt(std::move(ws_alts));
    std::vector<CodepointRange> all = {{0, Grammar::kMaxCodepoint}};
    char_ = json_unit(all);
  }

  // One JSON string character whose decoded value lies in `ranges`: raw
  // when JSON allows it raw, else its escape.
  int32_t json_unit(const std::vector<CodepointRange>& ranges) {
    std::vector<CodepointRange> raw;
    std::vector<int32_t> alts;
    for (const auto& r : ranges) {
      for (uint32_t lo = r.lo; lo <= r.hi;) {
        if (lo < 0x20 || lo == '"' || lo == '\\') {
          static const char* kShort[] = {nullptr, nullptr, nullptr, nullptr, nullptr,
                                         nullptr, nullptr, nullptr, "\\b",   "\\t",
                                         "\\n",   nullptr, "\\f",   "\\r"};
          std::string esc;
          if (lo == '"') {
            esc = "\\\"";
          } else if (lo == '\\') {
            esc = "\\\\";
          } else if (lo < 14 && kShort[lo]) {
            esc = kShort[lo];
          } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", lo);
            esc = buf;
          }
          alts.push_back(g_.bytes(esc));
          ++lo;
          continue;
        }
        uint32_t hi = r.hi;
        if (lo < '"' && hi >= '"') hi = '"' - 1;
        if (lo < '\\' && hi >= '\\') hi = '\\' - 1;
        raw.push_back({lo, hi});
        if (hi == Grammar::kMaxCodepoint) break;
        lo = hi + 1;
      }
    }
    if (!raw.empty()) alts.insert(alts.begin(), g_.char_class(raw));
    return g_.alt(std::move(alts));
  }

  int32_t string_literal(const std::string& s) { return g_.bytes(json(s).dump()); }

  int32_t plain_string() { return g_.seq({g_.bytes("\""), g_.star(char_), g_.bytes("\"")}); }

  int32_t number_expr() {
    const int32_t digit = g_.char_class({{'0', '9'}});
    const int32_t integer = g_.seq(
        {g_.optional(g_.bytes("-")),
         g_.alt({g_.bytes("0"), g_.seq({g_.char_class({{'1', '9'}}), g_.repeat(digit, 0, 17)})})});
    const int32_t frac = g_.seq({g_.bytes("."), g_.repeat(digit, 1, 17)});
    const int32_t exp =
        g_.seq({g_.char_class({{'e', 'e'}, {'E', 'E'}}),
                g_.optional(g_.char_class({{'+', '+'}, {'-', '-'}})), g_.repeat(digit, 1, 2)});
    return g_.seq({integer, g_.optional(frac), g_.optional(exp)});
  }

  int32_t any_value_rule() {
    if (any_rule_ >= 0) return any_rule_;
    any_rule_ = g_.add_rule("json_value");
    const int32_t v = g_.ref(any_rule_);
    const int32_t sep = g_.seq({ws_, g_.bytes(","), ws_});
    const int32_t member = g_.seq({plain_string(), ws_, g_.bytes(":"), ws_, v});
    const int32_t obj = bracketed("{", g_.seq({member, g_.star(g_.seq({sep, member}))}), true, "}");
    const int32_t arr = bracketed("[", g_.seq({v, g_.star(g_.seq({sep, v}))}), true, "]");
    g_.set_body(any_rule_, g_.alt({obj, arr, plain_string(), number_expr(), g_.bytes("true"),
                                   g_.bytes("false"), g_.bytes("null")}));
    return any_rule_;
  }

  int32_t any_object_expr() {
    const int32_t v = g_.ref(any_value_rule());
    const int32_t sep = g_.seq({ws_, g_.bytes(","), ws_});
    const int32_t member = g_.seq({plain_string(), ws_, g_.bytes(":"), ws_, v});
    return bracketed("{", g_.seq({member, g_.star(g_.seq({sep, member}))}), true, "}");
  }

  // open ws body ws close, or (when the body may be absent) open ws close:
  // exactly one whitespace run either way.
  int32_t bracketed(const char* open, int32_t body, bool may_be_empty, const char* close) {
    const int32_t full = g_.seq({g_.bytes(open), ws_, body, ws_, g_.bytes(close)});
    if (!may_be_empty) return full;
    return g_.alt({g_.seq({g_.bytes(open), ws_, g_.bytes(close)}), full});
  }

  // --- $ref ----------------------------------------------------------

  Result<const json*> resolve(const std::string& ref, const std::string& path) {
    if (ref.empty() || ref[0] != '#') return unsupported("$ref", path, "only local references");
    const std::string pointer = ref.substr(1);
    if (pointer.empty()) return &root_;
    if (pointer[0] != '/') return unsupported("$ref", path, "anchors unsupported: " + ref);
    const json* cur = &root_;
    size_t i = 1;
    while (true) {
      const size_t next = pointer.find('/', i);
      std::string token =
          pointer.substr(i, next == std::string::npos ? std::string::npos : next - i);
      std::string unescaped;
      for (size_t k = 0; k < token.size(); ++k) {
        if (token[k] == '~' && k + 1 < token.size()) {
          unescaped.push_back(token[k + 1] == '1' ? '/' : '~');
          ++k;
        } else if (token[k] == '%' && k + 2 < token.size()) {
          unescaped.push_back(static_cast<char>(std::stoi(token.substr(k + 1, 2), nullptr, 16)));
          k += 2;
        } else {
          unescaped.push_back(token[k]);
        }
      }
      if (cur->is_object() && cur->contains(unescaped)) {
        cur = &(*cur)[unescaped];
      } else if (cur->is_array() && !unescaped.empty() &&
                 std::all_of(unescaped.begin(), unescaped.end(), ::isdigit) &&
                 std::stoul(unescaped) < cur->size()) {
        cur = &(*cur)[std::stoul(unescaped)];
      } else {
        return bad_schema(path, "$ref '" + ref + "' does not resolve");
      }
      if (next == std::string::npos) break;
      i = next + 1;
    }
    return cur;
  }

  Result<int32_t> ref_rule(const std::string& ref, const std::string& path, int depth) {
    auto it = ref_rules_.find(ref);
    if (it != ref_rules_.end()) return g_.ref(it->second);
    STRATA_ASSIGN_OR_RETURN(const json* target, resolve(ref, path));
    const int32_t rule = g_.add_rule("ref " + ref);
    ref_rules_.emplace(ref, rule);
    STRATA_ASSIGN_OR_RETURN(int32_t body, value(*target, ref, depth + 1));
    g_.set_body(rule, body);
    return g_.ref(rule);
  }

  // --- merging (allOf, $ref with siblings, anyOf/oneOf branches) -------

  Result<json> expand_ref(const json& s, const std::string& path, int depth) {
    if (!s.is_object() || !s.contains("$ref")) return s;
    if (depth > opt_.max_depth) return bad_schema(path, "$ref chain too deep");
    if (!s["$ref"].is_string()) return bad_schema(path, "$ref must be a string");
    STRATA_ASSIGN_OR_RETURN(const json* target, resolve(s["$ref"].get<std::string>(), path));
    json rest = s;
    rest.erase("$ref");
    STRATA_ASSIGN_OR_RETURN(json t, expand_ref(*target, path, depth + 1));
    return merge(t, rest, path, depth + 1);
  }

  // Only annotations (and definitions): merging it changes nothing.
  static bool is_trivial(const json& s) {
    if (s.is_boolean()) return s.get<bool>();
    if (!s.is_object()) return false;
    for (auto& [k, v] : s.items())
      if (!kAnnotations.count(k) && k != "$defs" && k != "definitions") return false;
    return true;
  }

  Result<json> merge(json a, json b, const std::string& path, int depth) {
    if (depth > opt_.max_depth) return bad_schema(path, "schema nested too deeply");
    // Keep references unexpanded where possible: recursion stays a rule.
    if (is_trivial(b)) return a;
    if (is_trivial(a)) return b;
    if (a.is_boolean()) {
      if (!a.get<bool>()) return json(false);
      a = json::object();
    }
    if (b.is_boolean()) {
      if (!b.get<bool>()) return json(false);
      b = json::object();
    }
    if (!a.is_object() || !b.is_object()) return bad_schema(path, "schema must be an object");
    STRATA_ASSIGN_OR_RETURN(a, expand_ref(a, path, depth + 1));
    STRATA_ASSIGN_OR_RETURN(b, expand_ref(b, path, depth + 1));
    if (a.is_boolean() || b.is_boolean()) return merge(a, b, path, depth + 1);
    const json a_orig = a;
    for (auto& [k, v] : b.items()) {
      if (!a.contains(k)) {
        a[k] = v;
        continue;
      }
      json& x = a[k];
      if (kAnnotations.count(k) || k == "$defs" || k == "definitions") continue;
      if (k == "type") {
        std::set<std::string> ta = type_set(a_orig), tb = type_set(b), out;
        for (const auto& t : ta) {
          if (tb.count(t))
            out.insert(t);
          else if (t == "integer" && tb.count("number"))
            out.insert("integer");
          else if (t == "number" && tb.count("integer"))
            out.insert("integer");
        }
        if (out.empty()) return bad_schema(path, "allOf: types do not intersect (unsatisfiable)");
        json arr = json::array();
        for (const auto& t : out) arr.push_back(t);
        x = arr.size() == 1 ? arr[0] : arr;
      } else if (k == "required") {
        for (const auto& r : v)
          if (std::find(x.begin(), x.end(), r) == x.end()) x.push_back(r);
      } else if (k == "properties") {
        for (auto& [pk, pv] : v.items()) {
          if (x.contains(pk)) {
            STRATA_ASSIGN_OR_RETURN(x[pk], merge(x[pk], pv, child_path(path, pk), depth + 1));
          } else {
            x[pk] = pv;
          }
        }
      } else if (k == "additionalProperties" || k == "items") {
        STRATA_ASSIGN_OR_RETURN(x, merge(x, v, child_path(path, k), depth + 1));
      } else if (k == "minLength" || k == "minItems" || k == "minimum" || k == "exclusiveMinimum") {
        if (v > x) x = v;
      } else if (k == "maxLength" || k == "maxItems" || k == "maximum" || k == "exclusiveMaximum") {
        if (v < x) x = v;
      } else if (k == "enum") {
        json out = json::array();
        for (const auto& e : x)
          if (std::find(v.begin(), v.end(), e) != v.end()) out.push_back(e);
        x = out;
      } else if (k == "allOf") {
        for (const auto& e : v) x.push_back(e);
      } else if (x != v) {
        return unsupported(k, path, "allOf: cannot merge two different values");
      }
    }
    // A side with additionalProperties false/schema constrains the other
    // side's extra properties.
    for (const json* side : std::initializer_list<const json*>{&a_orig, &b}) {
      if (!side->contains("additionalProperties") || !a.contains("properties")) continue;
      const json& add = (*side)["additionalProperties"];
      const json own = side->contains("properties") ? (*side)["properties"] : json::object();
      json& props = a["properties"];
      std::vector<std::string> keys;
      for (auto& [pk, pv] : props.items()) keys.push_back(pk);
      for (const auto& pk : keys) {
        if (own.contains(pk)) continue;
        if (add.is_boolean() && !add.get<bool>()) {
          props.erase(pk);
        } else {
          STRATA_ASSIGN_OR_RETURN(props[pk],
                                  merge(props[pk], add, child_path(path, pk), depth + 1));
        }
      }
    }
    return a;
  }

  // --- the value grammar ----------------------------------------------

  Status check_keywords(const json& s, const std::string& path) {
    for (auto& [k, v] : s.items()) {
      if (kAnnotations.count(k)) continue;
      if (!kKeywords.count(k)) return unsupported(k, path);
    }
    return Status::ok();
  }

  Result<int32_t> value(const json& s, const std::string& path, int depth) {
    if (depth > opt_.max_depth) return bad_schema(path, "schema nested too deeply");
    if (s.is_boolean()) return s.get<bool>() ? g_.ref(any_value_rule()) : g_.alt({});
    if (!s.is_object()) return bad_schema(path, "a schema must be an object or a boolean");
    STRATA_RETURN_IF_ERROR(check_keywords(s, path));
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return bad_schema(path, "$ref must be a string");
      bool plain = true;
      for (auto& [k, v] : s.items())
        if (k != "$ref" && k != "$defs" && k != "definitions" && !kAnnotations.count(k))
          plain = false;
      if (plain) return ref_rule(s["$ref"].get<std::string>(), path, depth);
      STRATA_ASSIGN_OR_RETURN(json merged, expand_ref(s, path, depth));
      return value(merged, path, depth + 1);
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array() || s["allOf"].empty())
        return bad_schema(child_path(path, "allOf"), "must be a non-empty array");
      json merged = s;
      merged.erase("allOf");
      for (size_t i = 0; i < s["allOf"].size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(merged,
                                merge(merged, s["allOf"][i], index_path(path, "allOf", i), depth));
      }
      return value(merged, path, depth + 1);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!s.contains(key)) continue;
      const json& branches = s[key];
      if (!branches.is_array() || branches.empty())
        return bad_schema(child_path(path, key), "must be a non-empty array");
      json base = s;
      base.erase(key);
      std::vector<json> merged;
      for (size_t i = 0; i < branches.size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(json m, merge(base, branches[i], index_path(path, key, i), depth));
        merged.push_back(std::move(m));
      }
      if (std::string(key) == "oneOf") {
        std::vector<json> resolved;
        for (size_t i = 0; i < merged.size(); ++i) {
          STRATA_ASSIGN_OR_RETURN(json r, expand_ref(merged[i], index_path(path, key, i), depth));
          resolved.push_back(std::move(r));
        }
        for (size_t i = 0; i < resolved.size(); ++i)
          for (size_t j = i + 1; j < resolved.size(); ++j)
            if (!disjoint(resolved[i], resolved[j]))
              return unsupported("oneOf", path,
                                 "branches " + std::to_string(i) + " and " + std::to_string(j) +
                                     " are not provably exclusive; use anyOf");
      }
      std::vector<int32_t> alts;
      for (size_t i = 0; i < merged.size(); ++i) {
        STRATA_ASSIGN_OR_RETURN(int32_t a, value(merged[i], index_path(path, key, i), depth + 1));
        alts.push_back(a);
      }
      return g_.alt(std::move(alts));
    }
    const std::set<std::string> types = type_set(s);
    for (const auto& t : types)
      if (std::find(kAllTypes.begin(), kAllTypes.end(), t) == kAllTypes.end())
        return bad_schema(child_path(path, "type"), "unknown type '" + t + "'");
    if (s.contains("type") && !s["type"].is_string() && !s["type"].is_array())
      return bad_schema(child_path(path, "type"), "must be a string or an array");
    if (s.contains("const") || s.contains("enum")) return literals(s, types, path);
    std::vector<int32_t> alts;
    for (const auto& t : kAllTypes) {
      if (!types.count(t)) continue;
      if (t == "integer" && types.count("number")) continue;  // number covers it
      Result<int32_t> r = t == "null" ? Result<int32_t>(g_.bytes("null"))
                          : t == "boolean"
                              ? Result<int32_t>(g_.alt({g_.bytes("true"), g_.bytes("false")}))
                          : t == "object" ? object(s, path, depth)
                          : t == "array"  ? array(s, path, depth)
                          : t == "string" ? string(s, path)
                                          : numeric(s, path, t == "integer");
      if (!r.is_ok()) return r.status();
      alts.push_back(*r);
    }
    return g_.alt(std::move(alts));
  }

  Result<int32_t> literals(const json& s, const std::set<std::string>& types,
                           const std::string& path) {
    for (auto& [k, v] : s.items()) {
      if (k == "const" || k == "enum" || k == "type" || k == "$defs" || k == "definitions" ||
          kAnnotations.count(k))
        continue;
      return unsupported(k, path, "together with enum/const");
    }
    json values = json::array();
    if (s.contains("enum")) {
      if (!s["enum"].is_array()) return bad_schema(child_path(path, "enum"), "must be an array");
      values = s["enum"];
    }
    if (s.contains("const")) {
      if (s.contains("enum") && std::find(values.begin(), values.end(), s["const"]) == values.end())
        values = json::array();
      else
        values = json::array({s["const"]});
    }
    std::vector<int32_t> alts;
    for (const auto& v : values) {
      bool ok = false;
      for (const auto& t : types) ok = ok || value_has_type(v, t);
      if (ok) alts.push_back(g_.bytes(v.dump()));
    }
    if (alts.empty()) return bad_schema(path, "no enum/const value satisfies the schema");
    return g_.alt(std::move(alts));
  }

  // Whether two (merged) schemas can never accept the same value.
  bool disjoint(const json& a, const json& b) const {
    if (a.is_boolean() || b.is_boolean())
      return (a.is_boolean() && !a.get<bool>()) || (b.is_boolean() && !b.get<bool>());
    std::set<std::string> ta = type_set(a), tb = type_set(b);
    auto widen = [](std::set<std::string>* t) {
      if (t->count("number")) t->insert("integer");
    };
    widen(&ta);
    widen(&tb);
    bool common = false;
    for (const auto& t : ta) common = common || tb.count(t) > 0;
    if (!common) return true;
    auto values = [](const json& s, json* out) {
      if (s.contains("const")) {
        *out = json::array({s["const"]});
        return true;
      }
      if (s.contains("enum") && s["enum"].is_array()) {
        *out = s["enum"];
        return true;
      }
      return false;
    };
    json va, vb;
    if (values(a, &va) && values(b, &vb)) {
      for (const auto& x : va)
        if (std::find(vb.begin(), vb.end(), x) != vb.end()) return false;
      return true;
    }
    // A discriminator: a property both require whose values are disjoint.
    if (a.contains("properties") && b.contains("properties") && a.contains("required") &&
        b.contains("required")) {
      for (const auto& r : a["required"]) {
        if (!r.is_string() ||
            std::find(b["required"].begin(), b["required"].end(), r) == b["required"].end())
          continue;
        const std::string k = r.get<std::string>();
        if (a["properties"].contains(k) && b["properties"].contains(k) &&
            a["properties"][k].is_object() && b["properties"][k].is_object()) {
          json pa, pb;
          if (values(a["properties"][k], &pa) && values(b["properties"][k], &pb)) {
            bool overlap = false;
            for (const auto& x : pa)
              overlap = overlap || std::find(pb.begin(), pb.end(), x) != pb.end();
            if (!overlap) return true;
          }
        }
      }
    }
    return false;
  }

  // --- objects --------------------------------------------------------

  // A JSON string key, written without escapes, different from every name
  // in `names`: a trie of the names' code points where leaving the trie
  // (a character no name continues with) reaches a free state. Names with a
  // character a raw key cannot hold (" \ control) can never collide, so
  // their trie stops there.
  int32_t key_excluding(const std::vector<std::string>& names) {
    struct T {
      std::map<uint32_t, int32_t> next;
      bool is_name = false;
    };
    const std::vector<CodepointRange> key_chars = {
        {0x20, 0x21}, {0x23, 0x5B}, {0x5D, Grammar::kMaxCodepoint}};
    auto allowed = [](uint32_t cp) { return cp >= 0x20 && cp != '"' && cp != '\\'; };
    std::vector<T> t(1);
    for (const auto& n : names) {
      int32_t cur = 0;
      bool complete = true;
      for (size_t i = 0; i < n.size();) {
        const uint32_t cp = decode_utf8(n, &i);
        if (!allowed(cp)) {
          complete = false;
          break;
        }
        auto it = t[cur].next.find(cp);
        if (it == t[cur].next.end()) {
          t.push_back({});
          it = t[cur].next.emplace(cp, static_cast<int32_t>(t.size() - 1)).first;
        }
        cur = it->second;
      }
      if (complete) t[cur].is_name = true;
    }
    Automaton a;
    const int32_t free_state = static_cast<int32_t>(t.size());
    a.num_states = free_state + 1;
    a.start = 0;
    for (int32_t i = 0; i < static_cast<int32_t>(t.size()); ++i) {
      if (!t[i].is_name) a.finals.push_back(i);
      std::vector<CodepointRange> taken;
      for (const auto& [cp, child] : t[i].next) {
        a.edges.push_back({i, child, g_.char_class({{cp, cp}})});
        taken.push_back({cp, cp});
      }
      // key_chars minus the children: complement of (taken + excluded).
      std::vector<CodepointRange> blocked = taken;
      blocked.push_back({0, 0x1F});
      blocked.push_back({'"', '"'});
      blocked.push_back({'\\', '\\'});
      const auto leave = complement_ranges(normalize_ranges(std::move(blocked)));
      if (!leave.empty()) a.edges.push_back({i, free_state, g_.char_class(leave)});
    }
    a.finals.push_back(free_state);
    a.edges.push_back({free_state, free_state, g_.char_class(key_chars)});
    return g_.seq({g_.bytes("\""), g_.automaton(std::move(a)), g_.bytes("\"")});
  }

  static uint32_t decode_utf8(const std::string& s, size_t* i) {
    const unsigned char c = static_cast<unsigned char>(s[*i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    if (*i + n > s.size()) {
      *i = s.size();
      return 0xFFFD;
    }
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[*i + k]) & 0x3F);
    *i += n;
    return cp;
  }

  Result<int32_t> object(const json& s, const std::string& path, int depth) {
    json props = s.contains("properties") ? s["properties"] : json::object();
    if (!props.is_object()) return bad_schema(child_path(path, "properties"), "must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array())
        return bad_schema(child_path(path, "required"), "must be an array");
      for (const auto& r : s["required"]) {
        if (!r.is_string())
          return bad_schema(child_path(path, "required"), "names must be strings");
        required.insert(r.get<std::string>());
      }
    }
    json additional = false;
    if (s.contains("additionalProperties")) additional = s["additionalProperties"];
    const bool extras = !(additional.is_boolean() && !additional.get<bool>());
    const std::string add_path = child_path(path, "additionalProperties");
    // Required names without a property schema come from additionalProperties.
    for (const auto& r : required) {
      if (props.contains(r)) continue;
      if (!extras)
        return bad_schema(path, "required property '" + r +
                                    "' is not allowed (no schema and additionalProperties false)");
      props[r] = additional;
    }
    struct Member {
      int32_t expr;
      bool required;
    };
    std::vector<Member> members;
    std::vector<std::string> names;
    const std::string props_path = child_path(path, "properties");
    for (auto& [name, sub] : props.items()) {
      names.push_back(name);
      const std::string p = child_path(props_path, name);
      Result<int32_t> v = value(sub, p, depth + 1);
      if (!v.is_ok()) {
        // A property whose schema matches nothing may simply be left out.
        if (!required.count(name) && sub.is_boolean()) continue;
        return v.status();
      }
      const int32_t rule = g_.add_rule(p);
      g_.set_body(rule, *v);
      members.push_back({g_.seq({string_literal(name), ws_, g_.bytes(":"), ws_, g_.ref(rule)}),
                         required.count(name) > 0});
    }
    const int32_t sep = g_.seq({ws_, g_.bytes(","), ws_});
    int32_t rest = g_.empty(), first = g_.empty();
    if (extras) {
      STRATA_ASSIGN_OR_RETURN(int32_t add_value, value(additional, add_path, depth + 1));
      const int32_t add_rule = g_.add_rule(add_path);
      g_.set_body(add_rule, add_value);
      const int32_t member =
          g_.seq({key_excluding(names), ws_, g_.bytes(":"), ws_, g_.ref(add_rule)});
      rest = g_.star(g_.seq({sep, member}));
      first = g_.seq({member, rest});
    } else {
      first = g_.alt({});  // the non-empty chain's end: nothing left to write
    }
    bool may_be_empty = true;
    // S_i: members i.. after one was written; F_i: the first written is >= i.
    for (int32_t i = static_cast<int32_t>(members.size()) - 1; i >= 0; --i) {
      const Member& m = members[i];
      const int32_t s_rule = g_.add_rule(path + " rest" + std::to_string(i));
      g_.set_body(s_rule, rest);
      const int32_t s_next = g_.ref(s_rule);
      const int32_t new_rest = m.required ? g_.seq({sep, m.expr, s_next})
                                          : g_.seq({g_.optional(g_.seq({sep, m.expr})), s_next});
      const int32_t new_first =
          m.required ? g_.seq({m.expr, s_next}) : g_.alt({g_.seq({m.expr, s_next}), first});
      if (m.required) may_be_empty = false;
      rest = new_rest;
      first = new_first;
    }
    // `first` writes at least one member; the empty object is its own case.
    return bracketed("{", first, may_be_empty, "}");
  }

  // --- arrays ---------------------------------------------------------

  Result<int32_t> array(const json& s, const std::string& path, int depth) {
    if (s.contains("items") && s["items"].is_array())
      return unsupported("items", path, "array form; use prefixItems");
    int64_t min = 0, max = -1;
    if (s.contains("minItems")) {
      if (!s["minItems"].is_number_integer() || s["minItems"].get<int64_t>() < 0)
        return bad_schema(child_path(path, "minItems"), "must be a non-negative integer");
      min = s["minItems"].get<int64_t>();
    }
    if (s.contains("maxItems")) {
      if (!s["maxItems"].is_number_integer() || s["maxItems"].get<int64_t>() < 0)
        return bad_schema(child_path(path, "maxItems"), "must be a non-negative integer");
      max = s["maxItems"].get<int64_t>();
    }
    if (min > 10000 || max > 10000)
      return unsupported(min > 10000 ? "minItems" : "maxItems", path, "over 10000");
    if (max >= 0 && max < min) return bad_schema(path, "maxItems < minItems (unsatisfiable)");
    std::vector<int32_t> prefix;
    if (s.contains("prefixItems")) {
      if (!s["prefixItems"].is_array())
        return bad_schema(child_path(path, "prefixItems"), "must be an array");
      for (size_t i = 0; i < s["prefixItems"].size(); ++i) {
        const std::string p = index_path(path, "prefixItems", i);
        STRATA_ASSIGN_OR_RETURN(int32_t v, value(s["prefixItems"][i], p, depth + 1));
        const int32_t rule = g_.add_rule(p);
        g_.set_body(rule, v);
        prefix.push_back(g_.ref(rule));
      }
    }
    int32_t item = -1;  // -1: no items beyond the prefix
    const json items = s.contains("items") ? s["items"] : json(true);
    if (!(items.is_boolean() && !items.get<bool>())) {
      const std::string p = child_path(path, "items");
      STRATA_ASSIGN_OR_RETURN(int32_t v, value(items, p, depth + 1));
      const int32_t rule = g_.add_rule(p);
      g_.set_body(rule, v);
      item = g_.ref(rule);
    }
    const int64_t num_prefix = static_cast<int64_t>(prefix.size());
    if (item < 0 && min > num_prefix)
      return bad_schema(path, "minItems exceeds prefixItems with items false (unsatisfiable)");
    const int32_t sep = g_.seq({ws_, g_.bytes(","), ws_});
    // tail(i): elements i.. after i were written.
    auto tail = [&](auto&& self, int64_t i) -> int32_t {
      if (max >= 0 && i >= max) return g_.empty();
      if (i < num_prefix) {
        const int32_t more = g_.seq({sep, prefix[i], self(self, i + 1)});
        return i < min ? more : g_.optional(more);
      }
      if (item < 0) return g_.empty();
      const int64_t lo = std::max<int64_t>(min - i, 0);
      const int64_t hi = max < 0 ? -1 : max - i;
      return g_.repeat(g_.seq({sep, item}), static_cast<int32_t>(lo), static_cast<int32_t>(hi));
    };
    int32_t elems;
    if (num_prefix > 0) {
      elems = g_.seq({prefix[0], tail(tail, 1)});
    } else if (item >= 0) {
      elems = g_.seq({item, tail(tail, 1)});
    } else {
      elems = g_.alt({});
    }
    if (max == 0) elems = g_.alt({});
    return bracketed("[", elems, min == 0, "]");
  }

  // --- strings --------------------------------------------------------

  Result<int32_t> string(const json& s, const std::string& path) {
    int64_t min = 0, max = -1;
    for (const char* k : {"minLength", "maxLength"}) {
      if (!s.contains(k)) continue;
      if (!s[k].is_number_integer() || s[k].get<int64_t>() < 0)
        return bad_schema(child_path(path, k), "must be a non-negative integer");
      if (s[k].get<int64_t>() > 100000) return unsupported(k, path, "over 100000");
      (std::string(k) == "minLength" ? min : max) = s[k].get<int64_t>();
    }
    if (max >= 0 && max < min) return bad_schema(path, "maxLength < minLength (unsatisfiable)");
    std::string pattern;
    std::string pattern_key;
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string())
        return bad_schema(child_path(path, "pattern"), "must be a string");
      pattern = s["pattern"].get<std::string>();
      pattern_key = "pattern";
    }
    if (s.contains("format")) {
      if (!s["format"].is_string())
        return bad_schema(child_path(path, "format"), "must be a string");
      const std::string f = s["format"].get<std::string>();
      const char* re = format_regex(f);
      if (!re) return invalid_argument("unsupported JSON Schema format '" + f + "' at " + path);
      if (!pattern.empty()) return unsupported("format", path, "together with pattern");
      pattern = re;
      pattern_key = "format";
    }
    int32_t body;
    if (!pattern_key.empty()) {
      auto nfa = parse_regex(pattern);
      if (!nfa.is_ok()) return bad_schema(child_path(path, pattern_key), nfa.status().message());
      auto unit = [this](Grammar*, const std::vector<CodepointRange>& r) { return json_unit(r); };
      auto e = emit_regex(&g_, *nfa, static_cast<int32_t>(min), static_cast<int32_t>(max), unit);
      if (!e.is_ok()) return bad_schema(child_path(path, pattern_key), e.status().message());
      body = *e;
    } else {
      body = g_.repeat(char_, static_cast<int32_t>(min), static_cast<int32_t>(max));
    }
    return g_.seq({g_.bytes("\""), body, g_.bytes("\"")});
  }

  // --- numbers --------------------------------------------------------

  // Decimal integers in [a, b], 0 <= a <= b, no leading zeros.
  int32_t nonneg_range(int64_t a, int64_t b) {
    std::vector<int32_t> alts;
    int64_t low = 0, high = 9;
    for (int len = 1; len <= 19 && low <= b; ++len) {
      const int64_t lo = std::max(a, low), hi = std::min(b, high);
      if (lo <= hi) alts.push_back(same_length(std::to_string(lo), std::to_string(hi)));
      low = len == 1 ? 10 : low * 10;
      if (high > kMaxInt / 10) break;
      high = high * 10 + 9;
    }
    return g_.alt(std::move(alts));
  }

  int32_t same_length(const std::string& x, const std::string& y) {
    const size_t n = x.size();
    if (n == 1) return g_.char_class({{static_cast<uint32_t>(x[0]), static_cast<uint32_t>(y[0])}});
    if (x[0] == y[0])
      return g_.seq({g_.bytes(x.substr(0, 1)), same_length(x.substr(1), y.substr(1))});
    const bool x_zeros = x.find_first_not_of('0', 1) == std::string::npos;
    const bool y_nines = y.find_first_not_of('9', 1) == std::string::npos;
    const int32_t digit = g_.char_class({{'0', '9'}});
    const int32_t rest = g_.repeat(digit, static_cast<int32_t>(n - 1), static_cast<int32_t>(n - 1));
    std::vector<int32_t> alts;
    char mid_lo = x_zeros ? x[0] : static_cast<char>(x[0] + 1);
    char mid_hi = y_nines ? y[0] : static_cast<char>(y[0] - 1);
    if (!x_zeros)
      alts.push_back(
          g_.seq({g_.bytes(x.substr(0, 1)), same_length(x.substr(1), std::string(n - 1, '9'))}));
    if (mid_lo <= mid_hi)
      alts.push_back(g_.seq(
          {g_.char_class({{static_cast<uint32_t>(mid_lo), static_cast<uint32_t>(mid_hi)}}), rest}));
    if (!y_nines)
      alts.push_back(
          g_.seq({g_.bytes(y.substr(0, 1)), same_length(std::string(n - 1, '0'), y.substr(1))}));
    return g_.alt(std::move(alts));
  }

  // Integers in [lo, hi].
  int32_t int_range(int64_t lo, int64_t hi) {
    std::vector<int32_t> alts;
    if (lo < 0) {
      const int64_t nhi = std::min<int64_t>(hi, -1);
      alts.push_back(g_.seq({g_.bytes("-"), nonneg_range(-nhi, -lo)}));
    }
    if (hi >= 0) alts.push_back(nonneg_range(std::max<int64_t>(lo, 0), hi));
    return g_.alt(std::move(alts));
  }

  Result<int32_t> numeric(const json& s, const std::string& path, bool integer) {
    bool bounded = false;
    double lo = -static_cast<double>(kMaxInt), hi = static_cast<double>(kMaxInt);
    bool lo_excl = false, hi_excl = false;
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      if (s[k].is_boolean()) return unsupported(k, path, "draft-4 boolean form");
      if (!s[k].is_number()) return bad_schema(child_path(path, k), "must be a number");
      const double v = s[k].get<double>();
      if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(kMaxInt))
        return unsupported(k, path, "bound beyond 18 digits");
      bounded = true;
      const std::string key = k;
      if (key == "minimum" && (v > lo || (v == lo && lo_excl))) {
        if (v > lo) lo_excl = false;
        lo = std::max(lo, v);
      } else if (key == "exclusiveMinimum" && v >= lo) {
        lo = v;
        lo_excl = true;
      } else if (key == "maximum" && (v < hi || (v == hi && hi_excl))) {
        if (v < hi) hi_excl = false;
        hi = std::min(hi, v);
      } else if (key == "exclusiveMaximum" && v <= hi) {
        hi = v;
        hi_excl = true;
      }
    }
    if (!bounded && !integer) return number_expr();
    // Integral bounds.
    int64_t ilo = static_cast<int64_t>(std::ceil(lo));
    if (lo_excl && static_cast<double>(ilo) == lo) ++ilo;
    int64_t ihi = static_cast<int64_t>(std::floor(hi));
    if (hi_excl && static_cast<double>(ihi) == hi) --ihi;
    if (ilo > ihi) return bad_schema(path, "no integer satisfies the bounds (unsatisfiable)");
    const int32_t ints = int_range(ilo, ihi);
    if (integer) return ints;
    // Fractions where [I, I+1) (or (-(J+1), -J]) lies inside [ilo, ihi].
    const int32_t frac = g_.seq({g_.bytes("."), g_.repeat(g_.char_class({{'0', '9'}}), 1, 17)});
    std::vector<int32_t> alts = {ints};
    if (std::max<int64_t>(ilo, 0) <= ihi - 1)
      alts.push_back(g_.seq({nonneg_range(std::max<int64_t>(ilo, 0), ihi - 1), frac}));
    if (std::max<int64_t>(-ihi, 1) <= -ilo - 1)
      alts.push_back(
          g_.seq({g_.bytes("-"), nonneg_range(std::max<int64_t>(-ihi, 1), -ilo - 1), frac}));
    if (ilo <= -1 && ihi >= 0) alts.push_back(g_.seq({g_.bytes("-0"), frac}));
    return g_.alt(std::move(alts));
  }

  const json& root_;
  const JsonSchemaOptions& opt_;
  Grammar g_;
  int32_t ws_ = -1, char_ = -1, any_rule_ = -1;
  std::map<std::string, int32_t> ref_rules_;
};

}  // namespace

Result<Grammar> grammar_from_json_schema(std::string_view schema_json,
                                         const JsonSchemaOptions& options) {
  if (schema_json.size() > options.max_schema_bytes)
    return invalid_argument("JSON Schema too large");
  json schema = json::parse(schema_json, nullptr, false);
  if (schema.is_discarded()) return invalid_argument("JSON Schema is not valid JSON");
  return Converter(schema, options).run();
}

Grammar grammar_any_json(bool object_only, const JsonSchemaOptions& options) {
  const json empty = json::object();
  return Converter(empty, options).any(object_only);
}

Result<Grammar> grammar_from_choices(const std::vector<std::string>& choices) {
  if (choices.empty()) return invalid_argument("choice: the list is empty");
  Grammar g;
  const int32_t root = g.add_rule("root");
  std::vector<int32_t> alts;
  for (const auto& c : choices) alts.push_back(g.bytes(c));
  g.set_body(root, g.alt(std::move(alts)));
  g.set_root(root);
  return g;
}

}  // namespace strata
