// Value: the data a Jinja template computes with, modelled on the Python
// objects Jinja2 sees when Hugging Face renders a chat template.
//
// Kinds: Undefined (Jinja's default Undefined: prints as "", iterates as
// empty, is false, and raises on any other use with the message Jinja would
// give), None, bool, int (64-bit; Python's are unbounded, overflow is an
// error here), float, str (UTF-8, code point semantics via py_string.h; a
// flag marks markupsafe.Markup), list and tuple, dict (insertion-ordered like
// Python's, so `tojson` keeps key order), and Object for everything with
// behaviour: namespace(), the loop variable, macros, bound methods, builtin
// functions and one-shot iterators (what Jinja's generator filters return).
//
// Ownership: strings, lists and dicts are shared by reference count, so
// copying a Value is cheap. Strings and dicts never change; a list changes
// only through list.pop/clear, which Jinja's ImmutableSandboxedEnvironment
// allows (every holder sees the change, as in Python). Objects carry their
// own state (a namespace's attributes, an iterator's position). Values of
// one render are used by one thread; the literals of a parsed template
// (None, bools, numbers, strings) are only read and may be shared across
// threads, while list and dict literals are built afresh each evaluation.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::jinja {

class Value;
class Object;
class Interpreter;

enum class ValueKind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kDict,
  kObject,
};

// How an Undefined came to be, so that using it fails with Jinja's message:
// "'x' is undefined", "'dict object' has no attribute 'x'", "list object has
// no element 5", or an explicit hint.
struct UndefinedInfo {
  std::string hint;          // explicit message; wins when set
  std::string owner_type;    // object_type_repr of the object looked into; empty: a variable
  std::string name;          // variable or attribute name, or repr() of a non-string key
  bool name_is_key = false;  // the lookup used a non-string key ("has no element")
  bool is_security = false;  // Jinja's SecurityError (an unsafe attribute)
  std::string message() const;
};

class DictData;

class Value {
 public:
  Value() = default;  // Undefined, no detail
  static Value undefined(UndefinedInfo info);
  static Value undefined_hint(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  static Value markup(std::string s);
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(DictData d);
  static Value object(std::shared_ptr<Object> o);

  ValueKind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
  bool is_none() const { return kind_ == ValueKind::kNone; }
  bool is_bool() const { return kind_ == ValueKind::kBool; }
  bool is_int() const { return kind_ == ValueKind::kInt; }
  bool is_float() const { return kind_ == ValueKind::kFloat; }
  // Python numbers: bool, int, float.
  bool is_number() const {
    return kind_ == ValueKind::kBool || kind_ == ValueKind::kInt || kind_ == ValueKind::kFloat;
  }
  // int or bool (Python's int, bool being a subclass).
  bool is_integral() const { return kind_ == ValueKind::kBool || kind_ == ValueKind::kInt; }
  bool is_string() const { return kind_ == ValueKind::kString; }
  bool is_markup() const { return kind_ == ValueKind::kString && flag_; }
  bool is_list() const { return kind_ == ValueKind::kList; }  // list or tuple
  bool is_tuple() const { return kind_ == ValueKind::kList && flag_; }
  bool is_dict() const { return kind_ == ValueKind::kDict; }
  bool is_object() const { return kind_ == ValueKind::kObject; }

  bool as_bool() const { return b_; }
  // int (or bool as 0/1).
  int64_t as_int() const { return kind_ == ValueKind::kBool ? (b_ ? 1 : 0) : i_; }
  // Any number as a double.
  double as_double() const;
  double as_float() const { return f_; }
  const std::string& as_string() const { return *static_cast<const std::string*>(ptr_.get()); }
  const std::vector<Value>& as_list() const {
    return *static_cast<const std::vector<Value>*>(ptr_.get());
  }
  const DictData& as_dict() const { return *static_cast<const DictData*>(ptr_.get()); }
  // Objects manage their own state (a namespace's attributes).
  Object* as_object() const { return const_cast<Object*>(static_cast<const Object*>(ptr_.get())); }
  std::shared_ptr<Object> object_ptr() const;
  // The detail of an Undefined, or nullptr.
  const UndefinedInfo* undefined_info() const {
    return kind_ == ValueKind::kUndefined ? static_cast<const UndefinedInfo*>(ptr_.get()) : nullptr;
  }
  // Same heap object (Python's `is` for containers and objects).
  bool same_object(const Value& other) const {
    return kind_ == other.kind_ && ptr_ && ptr_ == other.ptr_;
  }
  // Nesting depth of a list/tuple/dict (1 + its deepest element; objects
  // count as leaves); 0 for everything else. Bounded by kMaxValueDepth, so
  // no recursive walk (==, <, repr, tojson, destruction) can exhaust the
  // stack.
  int depth() const { return depth_; }

 private:
  ValueKind kind_ = ValueKind::kUndefined;
  bool flag_ = false;  // tuple (lists), Markup (strings)
  uint16_t depth_ = 0;
  union {
    bool b_;
    int64_t i_ = 0;
    double f_;
  };
  std::shared_ptr<const void> ptr_;
};

// A dict: entries in insertion order; keys compare as Python hashes them
// (1 == 1.0 == True). Small dicts are searched linearly, which is what chat
// messages and tool schemas are.
class DictData {
 public:
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  // Python's d[key] = value: replaces in place or appends. Throws a runtime
  // error for an unhashable key (list, dict).
  void set(Value key, Value value);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  void reserve(size_t n) { entries_.reserve(n); }

 private:
  std::vector<std::pair<Value, Value>> entries_;
};

// Lists and dicts nested deeper than this are a kLimit error (Python gives
// up near 1000 levels of recursion itself).
inline constexpr int kMaxValueDepth = 512;

// Arguments of a call: positional, then keyword (in call order).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

// Things with behaviour. Subclasses: namespace, loop, macro, methods,
// builtin functions, iterators. They are owned by Values (shared_ptr).
class Object {
 public:
  virtual ~Object() = default;
  // Python's type name ("Namespace", "LoopContext", "Macro", ...).
  virtual std::string type_name() const = 0;
  // object_type_repr(): "jinja2.utils.Namespace object", ...
  virtual std::string type_repr() const = 0;
  // repr()/str() (they agree for every object here).
  virtual std::string repr() const = 0;
  // repr() appended to `out`; objects holding values (a namespace) override
  // it to stop past `max_bytes` (see value_format.h) and past `depth`
  // levels of nesting.
  virtual void append_repr(std::string* out, size_t max_bytes, int depth) const {
    (void)max_bytes;
    (void)depth;
    *out += repr();
  }
  // Attribute lookup (environment.getattr): nullopt when there is none.
  virtual std::optional<Value> get_attr(std::string_view name) const {
    (void)name;
    return std::nullopt;
  }
  virtual bool is_callable() const { return false; }
  virtual Value call(Interpreter& interp, CallArgs& args);
  // iter(): nullopt when not iterable. A one-shot iterator returns its
  // remaining items and is exhausted afterwards.
  virtual std::optional<std::vector<Value>> iterate() { return std::nullopt; }
  // len(): nullopt when the object has no length.
  virtual std::optional<int64_t> length() const { return std::nullopt; }
};

// ---- Python semantics ----

// bool(value).
bool truthy(const Value& v);
// a == b (Undefined equals only Undefined; tuples never equal lists).
bool equal(const Value& a, const Value& b);
// a < b; throws a runtime error where Python raises TypeError (and the
// Undefined's error when either side is undefined).
bool less(const Value& a, const Value& b);
// Python's type(x).__name__ ("str", "int", "list", "dict", "NoneType", ...).
std::string type_name(const Value& v);
// Jinja's object_type_repr(): "None", "dict object", "str object", ...
std::string object_type_repr(const Value& v);
// Throws the error an operation on this Undefined raises.
[[noreturn]] void fail_undefined(const Value& v);
// The items `for x in value` visits (dict: keys; str: code points); throws
// Python's TypeError for non-iterables; Undefined gives none.
std::vector<Value> iterate(const Value& v);
// len(value), or nullopt where Python raises TypeError.
std::optional<int64_t> length_of(const Value& v);
// `needle in haystack`.
bool contains(const Value& haystack, const Value& needle);

// JSON (nlohmann::ordered_json keeps key order) to Value: objects become
// dicts, arrays lists, numbers int or float as stored. Throws
// TemplateException (kLimit) past kMaxValueDepth levels of nesting.
Value value_from_json(const nlohmann::ordered_json& j);

}  // namespace strata::jinja
