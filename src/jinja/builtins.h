// Builtins of Hugging Face's Jinja environment: Jinja2's filters and tests,
// the methods of Python's str/list/dict that templates call, the globals
// (range, dict, namespace, cycler, joiner, raise_exception, strftime_now),
// and the Object types behind them. Internal to strata_jinja; every
// function is stateless and thread-safe (state lives in the Interpreter
// and in the objects of one render).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace strata::jinja {

// Resolution by name; nullptr when Jinja has no such filter/test.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);
// A global by name (a fresh object), or nullopt.
std::optional<Value> make_global(std::string_view name);

// Whether `self` has a method `name`, and whether the sandbox allows it.
enum class MethodAccess { kNone, kSafe, kUnsafe };
MethodAccess method_access(const Value& self, std::string_view name);
// Calls a method that method_access() reported kSafe.
Value call_method(Interpreter& interp, const Value& self, const std::string& name, CallArgs& args);
// The Undefined the sandbox returns for an unsafe attribute.
Value unsafe_undefined(const Value& obj, std::string_view name);
// The Undefined for a missing attribute / item of `obj`.
Value missing_attribute(const Value& obj, std::string_view name);
Value missing_item(const Value& obj, const Value& key);

// Binds call arguments to a Python signature: positional parameters in
// order, then keywords by name. Throws Python's TypeErrors.
class ArgBinder {
 public:
  ArgBinder(std::string_view function, CallArgs& args, std::initializer_list<const char*> params);
  // The argument for parameter i, or nullptr if not given.
  const Value* get(size_t i) const { return slots_[i]; }
  Value get_or(size_t i, Value fallback) const { return slots_[i] ? *slots_[i] : fallback; }

 private:
  std::vector<const Value*> slots_;
};

// Python int()/float() coercion of a filter argument; throws TypeError.
int64_t to_int_arg(const Value& v, std::string_view what);

// A builtin callable (globals, bound filters).
class BuiltinFunction : public Object {
 public:
  using Fn = Value (*)(Interpreter& interp, CallArgs& args);
  BuiltinFunction(std::string name, Fn fn) : name_(std::move(name)), fn_(fn) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string type_repr() const override { return "builtin_function_or_method object"; }
  std::string repr() const override { return "<built-in function " + name_ + ">"; }
  bool is_callable() const override { return true; }
  Value call(Interpreter& interp, CallArgs& args) override { return fn_(interp, args); }

 private:
  std::string name_;
  Fn fn_;
};

// `obj.method` taken without calling it.
class BoundMethod : public Object {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string type_repr() const override { return "builtin_function_or_method object"; }
  std::string repr() const override;
  bool is_callable() const override { return true; }
  Value call(Interpreter& interp, CallArgs& args) override {
    return call_method(interp, self_, name_, args);
  }

 private:
  Value self_;
  std::string name_;
};

// jinja2.utils.Namespace: attributes settable with {% set ns.x = ... %}.
class NamespaceObject : public Object {
 public:
  explicit NamespaceObject(DictData attrs) : attrs_(std::move(attrs)) {}
  std::string type_name() const override { return "Namespace"; }
  std::string type_repr() const override { return "jinja2.utils.Namespace object"; }
  std::string repr() const override;
  void append_repr(std::string* out, size_t max_bytes, int depth) const override;
  std::optional<Value> get_attr(std::string_view name) const override;
  void set_attr(const std::string& name, Value value) {
    attrs_.set(Value::string(name), std::move(value));
  }
  void clear() { attrs_ = DictData(); }

 private:
  DictData attrs_;
  mutable bool in_repr_ = false;  // a namespace that holds itself prints {...}
};

// What Jinja's generator filters (select, map, items, ...) return: iterable
// once, truthy, without a length.
class IteratorObject : public Object {
 public:
  IteratorObject(std::string kind, std::vector<Value> items)
      : kind_(std::move(kind)), items_(std::move(items)) {}
  std::string type_name() const override { return kind_; }
  std::string type_repr() const override { return kind_ + " object"; }
  std::string repr() const override { return "<" + kind_ + " object>"; }
  std::optional<std::vector<Value>> iterate() override {
    std::vector<Value> out = std::move(items_);
    items_.clear();
    return out;
  }

 private:
  std::string kind_;
  std::vector<Value> items_;
};

}  // namespace strata::jinja
