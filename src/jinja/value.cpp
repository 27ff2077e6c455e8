#include "jinja/value.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "jinja/value_format.h"

namespace strata::jinja {
namespace {

bool is_hashable(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kList:
      if (!v.is_tuple()) return false;
      for (const Value& item : v.as_list()) {
        if (!is_hashable(item)) return false;
      }
      return true;
    case ValueKind::kDict:
      return false;
    default:
      return true;
  }
}

}  // namespace

std::string UndefinedInfo::message() const {
  if (!hint.empty()) return hint;
  std::string out;
  if (owner_type.empty()) {
    py::append_repr(name, &out);
    return out + " is undefined";
  }
  if (name_is_key) return owner_type + " has no element " + name;
  py::append_repr(owner_type, &out);
  out += " has no attribute ";
  py::append_repr(name, &out);
  return out;
}

// ---- DictData ----

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& [k, v] : entries_) {
    if (equal(k, key)) return &v;
  }
  return nullptr;
}

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

void DictData::set(Value key, Value value) {
  if (!is_hashable(key)) throw_runtime("unhashable type: '" + type_name(key) + "'");
  for (auto& [k, v] : entries_) {
    if (equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

// ---- Value ----

Value Value::undefined(UndefinedInfo info) {
  Value v;
  v.ptr_ = std::make_shared<const UndefinedInfo>(std::move(info));
  return v;
}

Value Value::undefined_hint(std::string hint) {
  UndefinedInfo info;
  info.hint = std::move(hint);
  return undefined(std::move(info));
}

Value Value::none() {
  Value v;
  v.kind_ = ValueKind::kNone;
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = ValueKind::kBool;
  v.b_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = ValueKind::kInt;
  v.i_ = i;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.kind_ = ValueKind::kFloat;
  v.f_ = d;
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = ValueKind::kString;
  v.ptr_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::markup(std::string s) {
  Value v = string(std::move(s));
  v.flag_ = true;
  return v;
}

namespace {

uint16_t container_depth(int deepest_child) {
  if (deepest_child + 1 > kMaxValueDepth) {
    throw_limit("values nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  }
  return static_cast<uint16_t>(deepest_child + 1);
}

}  // namespace

Value Value::list(std::vector<Value> items) {
  Value v;
  v.kind_ = ValueKind::kList;
  int deepest = 0;
  for (const Value& item : items) deepest = std::max(deepest, item.depth());
  v.depth_ = container_depth(deepest);
  v.ptr_ = std::make_shared<const std::vector<Value>>(std::move(items));
  return v;
}

Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.flag_ = true;
  return v;
}

Value Value::dict(DictData d) {
  Value v;
  v.kind_ = ValueKind::kDict;
  int deepest = 0;
  for (const auto& [key, value] : d.entries()) {
    deepest = std::max({deepest, key.depth(), value.depth()});
  }
  v.depth_ = container_depth(deepest);
  v.ptr_ = std::make_shared<const DictData>(std::move(d));
  return v;
}

Value Value::object(std::shared_ptr<Object> o) {
  Value v;
  v.kind_ = ValueKind::kObject;
  v.ptr_ = std::move(o);
  return v;
}

double Value::as_double() const {
  switch (kind_) {
    case ValueKind::kBool:
      return b_ ? 1.0 : 0.0;
    case ValueKind::kInt:
      return static_cast<double>(i_);
    case ValueKind::kFloat:
      return f_;
    default:
      return 0.0;
  }
}

std::shared_ptr<Object> Value::object_ptr() const {
  return std::const_pointer_cast<Object>(std::static_pointer_cast<const Object>(ptr_));
}

Value Object::call(Interpreter& interp, CallArgs& args) {
  (void)interp;
  (void)args;
  throw_runtime("'" + type_name() + "' object is not callable");
}

// ---- semantics ----

bool truthy(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
    case ValueKind::kNone:
      return false;
    case ValueKind::kBool:
      return v.as_bool();
    case ValueKind::kInt:
      return v.as_int() != 0;
    case ValueKind::kFloat:
      return v.as_float() != 0.0;
    case ValueKind::kString:
      return !v.as_string().empty();
    case ValueKind::kList:
      return !v.as_list().empty();
    case ValueKind::kDict:
      return !v.as_dict().empty();
    case ValueKind::kObject: {
      const auto n = v.as_object()->length();
      return !n || *n != 0;
    }
  }
  return false;
}

bool equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::kUndefined:
    case ValueKind::kNone:
      return true;
    case ValueKind::kString:
      return a.as_string() == b.as_string();
    case ValueKind::kList: {
      if (a.is_tuple() != b.is_tuple()) return false;
      const auto& x = a.as_list();
      const auto& y = b.as_list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!equal(x[i], y[i])) return false;
      }
      return true;
    }
    case ValueKind::kDict: {
      const auto& x = a.as_dict();
      const auto& y = b.as_dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.find(k);
        if (!other || !equal(v, *other)) return false;
      }
      return true;
    }
    case ValueKind::kObject:
      return a.same_object(b);
    default:
      return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equal(x[i], y[i])) return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw_runtime("'<' not supported between instances of '" + type_name(a) + "' and '" +
                type_name(b) + "'");
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
      return "Undefined";
    case ValueKind::kNone:
      return "NoneType";
    case ValueKind::kBool:
      return "bool";
    case ValueKind::kInt:
      return "int";
    case ValueKind::kFloat:
      return "float";
    case ValueKind::kString:
      return v.is_markup() ? "Markup" : "str";
    case ValueKind::kList:
      return v.is_tuple() ? "tuple" : "list";
    case ValueKind::kDict:
      return "dict";
    case ValueKind::kObject:
      return v.as_object()->type_name();
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kNone:
      return "None";
    case ValueKind::kUndefined:
      return "jinja2.runtime.Undefined object";
    case ValueKind::kString:
      return v.is_markup() ? "markupsafe.Markup object" : "str object";
    case ValueKind::kObject:
      return v.as_object()->type_repr();
    default:
      return type_name(v) + " object";
  }
}

void fail_undefined(const Value& v) {
  const UndefinedInfo* info = v.undefined_info();
  if (!info) throw_runtime("'<undefined>' is undefined");
  throw_runtime(info->message());
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
      return {};
    case ValueKind::kString: {
      std::vector<Value> out;
      const std::string& s = v.as_string();
      for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        py::next_code_point(s, &pos);
        out.push_back(Value::string(s.substr(start, pos - start)));
      }
      return out;
    }
    case ValueKind::kList:
      return v.as_list();
    case ValueKind::kDict: {
      std::vector<Value> out;
      out.reserve(v.as_dict().size());
      for (const auto& [k, value] : v.as_dict().entries()) out.push_back(k);
      return out;
    }
    case ValueKind::kObject: {
      auto items = v.as_object()->iterate();
      if (!items) throw_runtime("'" + type_name(v) + "' object is not iterable");
      return std::move(*items);
    }
    default:
      throw_runtime("'" + type_name(v) + "' object is not iterable");
  }
}

std::optional<int64_t> length_of(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
      return 0;
    case ValueKind::kString:
      return static_cast<int64_t>(py::length(v.as_string()));
    case ValueKind::kList:
      return static_cast<int64_t>(v.as_list().size());
    case ValueKind::kDict:
      return static_cast<int64_t>(v.as_dict().size());
    case ValueKind::kObject:
      return v.as_object()->length();
    default:
      return std::nullopt;
  }
}

bool contains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case ValueKind::kString:
      if (!needle.is_string()) {
        if (needle.is_undefined()) {
          throw_runtime("'in <string>' requires string as left operand, not Undefined");
        }
        throw_runtime("'in <string>' requires string as left operand, not " + type_name(needle));
      }
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    case ValueKind::kList:
      for (const Value& item : haystack.as_list()) {
        if (equal(item, needle)) return true;
      }
      return false;
    case ValueKind::kDict:
      if (!is_hashable(needle)) throw_runtime("unhashable type: '" + type_name(needle) + "'");
      return haystack.as_dict().find(needle) != nullptr;
    case ValueKind::kUndefined:
      return false;
    case ValueKind::kObject: {
      auto items = haystack.as_object()->iterate();
      if (!items) {
        throw_runtime("argument of type '" + type_name(haystack) + "' is not iterable");
      }
      for (const Value& item : *items) {
        if (equal(item, needle)) return true;
      }
      return false;
    }
    default:
      throw_runtime("argument of type '" + type_name(haystack) + "' is not iterable");
  }
}

namespace {

Value from_json(const nlohmann::ordered_json& j, int depth) {
  if ((j.is_array() || j.is_object()) && depth >= kMaxValueDepth) {
    throw_limit("JSON nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  }
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(from_json(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      DictData d;
      d.reserve(j.size());
      for (const auto& [k, item] : j.items()) d.set(Value::string(k), from_json(item, depth + 1));
      return Value::dict(std::move(d));
    }
    default:
      return Value::none();
  }
}

}  // namespace

Value value_from_json(const nlohmann::ordered_json& j) {
  return from_json(j, 0);
}

}  // namespace strata::jinja
