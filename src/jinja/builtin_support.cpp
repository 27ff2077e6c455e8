// Shared pieces of the builtins: argument binding, the sandbox's Undefined
// values, namespace and bound-method objects.
#include <cmath>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "jinja/value_format.h"

namespace strata::jinja {

ArgBinder::ArgBinder(std::string_view function, CallArgs& args,
                     std::initializer_list<const char*> params)
    : slots_(params.size(), nullptr) {
  if (args.positional.size() > params.size()) {
    throw_runtime(std::string(function) + "() takes at most " + std::to_string(params.size()) +
                  " argument(s) (" + std::to_string(args.positional.size()) + " given)");
  }
  for (size_t i = 0; i < args.positional.size(); ++i) slots_[i] = &args.positional[i];
  for (const auto& [key, value] : args.keywords) {
    size_t i = 0;
    for (const char* p : params) {
      if (key == p) break;
      ++i;
    }
    if (i == params.size()) {
      throw_runtime(std::string(function) + "() got an unexpected keyword argument '" + key + "'");
    }
    if (slots_[i]) {
      throw_runtime(std::string(function) + "() got multiple values for argument '" + key + "'");
    }
    slots_[i] = &value;
  }
}

int64_t to_int_arg(const Value& v, std::string_view what) {
  if (v.is_integral()) return v.as_int();
  if (v.is_undefined()) fail_undefined(v);
  throw_runtime("'" + type_name(v) + "' object cannot be interpreted as an integer (" +
                std::string(what) + ")");
}

std::string BoundMethod::repr() const {
  return "<built-in method " + name_ + " of " + object_type_repr(self_) + ">";
}

std::string NamespaceObject::repr() const {
  std::string out;
  append_repr(&out, kNoByteLimit, 0);
  return out;
}

void NamespaceObject::append_repr(std::string* out, size_t max_bytes, int depth) const {
  // Python's dict repr prints a dict it is already printing as {...}.
  if (in_repr_) {
    *out += "<Namespace {...}>";
    return;
  }
  in_repr_ = true;
  *out += "<Namespace ";
  try {
    // The attributes, as a dict repr (not a dict Value: that would count
    // the depth of what the namespace holds against kMaxValueDepth twice).
    *out += '{';
    bool first = true;
    for (const auto& [k, v] : attrs_.entries()) {
      if (!first) *out += ", ";
      first = false;
      append_repr_at(k, out, max_bytes, depth + 1);
      *out += ": ";
      append_repr_at(v, out, max_bytes, depth + 1);
    }
    *out += '}';
  } catch (...) {
    in_repr_ = false;
    throw;
  }
  in_repr_ = false;
  *out += ">";
}

std::optional<Value> NamespaceObject::get_attr(std::string_view name) const {
  if (const Value* v = attrs_.find(name)) return *v;
  return std::nullopt;
}

Value unsafe_undefined(const Value& obj, std::string_view name) {
  UndefinedInfo info;
  std::string attr;
  py::append_repr(name, &attr);
  std::string type;
  py::append_repr(type_name(obj), &type);
  info.hint = "access to attribute " + attr + " of " + type + " object is unsafe.";
  info.name = std::string(name);
  info.owner_type = object_type_repr(obj);
  info.is_security = true;
  return Value::undefined(std::move(info));
}

Value missing_attribute(const Value& obj, std::string_view name) {
  UndefinedInfo info;
  info.owner_type = object_type_repr(obj);
  info.name = std::string(name);
  return Value::undefined(std::move(info));
}

Value missing_item(const Value& obj, const Value& key) {
  if (key.is_string()) return missing_attribute(obj, key.as_string());
  UndefinedInfo info;
  info.owner_type = object_type_repr(obj);
  info.name = to_repr(key, size_t{1} << 20);
  info.name_is_key = true;
  return Value::undefined(std::move(info));
}

}  // namespace strata::jinja
