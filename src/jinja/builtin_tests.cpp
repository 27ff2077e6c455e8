// Jinja2 3.1's builtin tests (jinja2/tests.py), with Python's answers for
// each kind of value (an Undefined is a sequence and iterable and callable,
// as Jinja's Undefined class makes it).
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "jinja/value_format.h"

namespace strata::jinja {
namespace {

const Value& one_arg(CallArgs& args, const char* test, const char* param) {
  ArgBinder b(test, args, {param});
  if (!b.get(0))
    throw_runtime(std::string(test) + "() missing 1 required positional argument: '" + param + "'");
  return *b.get(0);
}

void no_args(CallArgs& args, const char* test) {
  ArgBinder b(test, args, {});
}

Value modulo(Interpreter& interp, const Value& v, const Value& n) {
  return interp.binary_op(BinaryOp::kMod, v, n);
}

bool t_odd(Interpreter& interp, const Value& v, CallArgs& args) {
  no_args(args, "odd");
  return equal(modulo(interp, v, Value::integer(2)), Value::integer(1));
}
bool t_even(Interpreter& interp, const Value& v, CallArgs& args) {
  no_args(args, "even");
  return equal(modulo(interp, v, Value::integer(2)), Value::integer(0));
}
bool t_divisibleby(Interpreter& interp, const Value& v, CallArgs& args) {
  return equal(modulo(interp, v, one_arg(args, "divisibleby", "num")), Value::integer(0));
}
bool t_defined(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "defined");
  return !v.is_undefined();
}
bool t_undefined(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "undefined");
  return v.is_undefined();
}
bool t_filter(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "filter");
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}
bool t_test(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "test");
  return v.is_string() && find_test(v.as_string()) != nullptr;
}
bool t_none(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "none");
  return v.is_none();
}
bool t_boolean(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "boolean");
  return v.is_bool();
}
bool t_false(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "false");
  return v.is_bool() && !v.as_bool();
}
bool t_true(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "true");
  return v.is_bool() && v.as_bool();
}
bool t_integer(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "integer");
  return v.is_int();
}
bool t_float(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "float");
  return v.is_float();
}
bool t_number(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "number");
  return v.is_number();
}
bool t_lower(Interpreter& interp, const Value& v, CallArgs& args) {
  no_args(args, "lower");
  return py::is_lower_string(to_str(v, interp.max_string_bytes()));
}
bool t_upper(Interpreter& interp, const Value& v, CallArgs& args) {
  no_args(args, "upper");
  return py::is_upper_string(to_str(v, interp.max_string_bytes()));
}
bool t_string(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "string");
  return v.is_string();
}
bool t_mapping(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "mapping");
  return v.is_dict();
}
bool t_sequence(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "sequence");
  // len() and __getitem__: str, list, tuple, dict, and Undefined.
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_iterable(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "iterable");
  if (v.is_object()) {
    return v.as_object()->type_name() == "LoopContext" ||
           dynamic_cast<IteratorObject*>(v.as_object()) != nullptr;
  }
  return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}
bool t_callable(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "callable");
  return v.is_undefined() || (v.is_object() && v.as_object()->is_callable());
}
bool t_sameas(Interpreter&, const Value& v, CallArgs& args) {
  const Value& other = one_arg(args, "sameas", "other");
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case ValueKind::kNone:
      return true;
    case ValueKind::kBool:
      return v.as_bool() == other.as_bool();
    // CPython caches the small integers, so equal ones are the same object.
    case ValueKind::kInt:
      return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    default:
      return v.same_object(other);
  }
}
bool t_escaped(Interpreter&, const Value& v, CallArgs& args) {
  no_args(args, "escaped");
  return v.is_markup();
}
bool t_in(Interpreter&, const Value& v, CallArgs& args) {
  return contains(one_arg(args, "in", "seq"), v);
}

const Value& operand(CallArgs& args, const char* name) {
  if (args.positional.size() != 1 || !args.keywords.empty()) {
    throw_runtime(std::string(name) + " expected 2 arguments, got " +
                  std::to_string(args.positional.size() + args.keywords.size() + 1));
  }
  return args.positional[0];
}

bool t_eq(Interpreter&, const Value& v, CallArgs& a) {
  return equal(v, operand(a, "eq"));
}
bool t_ne(Interpreter&, const Value& v, CallArgs& a) {
  return !equal(v, operand(a, "ne"));
}
bool t_gt(Interpreter&, const Value& v, CallArgs& a) {
  return less(operand(a, "gt"), v);
}
bool t_ge(Interpreter&, const Value& v, CallArgs& a) {
  const Value& o = operand(a, "ge");
  return less(o, v) || equal(v, o);
}
bool t_lt(Interpreter&, const Value& v, CallArgs& a) {
  return less(v, operand(a, "lt"));
}
bool t_le(Interpreter&, const Value& v, CallArgs& a) {
  const Value& o = operand(a, "le");
  return less(v, o) || equal(v, o);
}

const std::unordered_map<std::string_view, TestFn>& tests() {
  static const std::unordered_map<std::string_view, TestFn> kTests = {
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"filter", t_filter},
      {"test", t_test},
      {"none", t_none},
      {"boolean", t_boolean},
      {"false", t_false},
      {"true", t_true},
      {"integer", t_integer},
      {"float", t_float},
      {"lower", t_lower},
      {"upper", t_upper},
      {"string", t_string},
      {"mapping", t_mapping},
      {"number", t_number},
      {"sequence", t_sequence},
      {"iterable", t_iterable},
      {"callable", t_callable},
      {"sameas", t_sameas},
      {"escaped", t_escaped},
      {"in", t_in},
      {"==", t_eq},
      {"eq", t_eq},
      {"equalto", t_eq},
      {"!=", t_ne},
      {"ne", t_ne},
      {">", t_gt},
      {"gt", t_gt},
      {"greaterthan", t_gt},
      {"ge", t_ge},
      {">=", t_ge},
      {"<", t_lt},
      {"lt", t_lt},
      {"lessthan", t_lt},
      {"<=", t_le},
      {"le", t_le},
  };
  return kTests;
}

}  // namespace

TestFn find_test(std::string_view name) {
  const auto& all = tests();
  auto it = all.find(name);
  return it == all.end() ? nullptr : it->second;
}

}  // namespace strata::jinja
