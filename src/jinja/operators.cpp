#include "jinja/operators.h"

#include <cmath>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/py_format.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"

namespace strata::jinja {

void fail_integer_overflow() {
  throw_limit("integer result beyond 64 bits");
}

namespace {

[[noreturn]] void fail_type(const std::string& op, const Value& a, const Value& b) {
  throw_runtime("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
                type_name(b) + "'");
}

bool checked_add(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
bool checked_sub(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_sub_overflow(a, b, out);
}
bool checked_mul(int64_t a, int64_t b, int64_t* out) {
  return !__builtin_mul_overflow(a, b, out);
}

[[noreturn]] void fail_integer_overflow() {
  throw_limit("integer result beyond 64 bits");
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) fail_integer_overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double float_mod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0.0) {
    if ((b < 0) != (r < 0)) r += b;
  } else {
    r = std::copysign(0.0, b);
  }
  return r;
}

Value add(Interpreter& interp, const Value& a, const Value& b) {
  if (a.is_integral() && b.is_integral()) {
    int64_t r;
    if (!checked_add(a.as_int(), b.as_int(), &r)) fail_integer_overflow();
    return Value::integer(r);
  }
  if (a.is_number() && b.is_number()) return Value::number(a.as_double() + b.as_double());
  if (a.is_string() && b.is_string()) {
    if (a.is_markup() || b.is_markup()) {
      const std::string l = a.is_markup() ? a.as_string() : py::escape_html(a.as_string());
      const std::string r = b.is_markup() ? b.as_string() : py::escape_html(b.as_string());
      return interp.make_string(l + r, true);
    }
    std::string s;
    s.reserve(a.as_string().size() + b.as_string().size());
    s += a.as_string();
    s += b.as_string();
    return interp.make_string(std::move(s));
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    std::vector<Value> items = a.as_list();
    items.insert(items.end(), b.as_list().begin(), b.as_list().end());
    interp.charge_items(items.size());
    return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_string() && !a.is_markup()) {
    throw_runtime("can only concatenate str (not \"" + type_name(b) + "\") to str");
  }
  if (a.is_list() && !a.is_tuple()) {
    throw_runtime("can only concatenate list (not \"" + type_name(b) + "\") to list");
  }
  fail_type("+", a, b);
}

Value repeat(Interpreter& interp, const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() &&
        static_cast<uint64_t>(n) > interp.options().limits.max_output_bytes / s.size()) {
      throw_limit("template built a string of more than " +
                  std::to_string(interp.options().limits.max_output_bytes) + " bytes");
    }
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return interp.make_string(std::move(out), seq.is_markup());
  }
  const auto& items = seq.as_list();
  if (!items.empty()) interp.charge_items(static_cast<size_t>(n) * items.size());
  std::vector<Value> out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return seq.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value binary(Interpreter& interp, BinaryOp op, const Value& a, const Value& b) {
  if (op == BinaryOp::kAdd) return add(interp, a, b);
  if (op == BinaryOp::kMul) {
    if ((a.is_string() || a.is_list()) && b.is_integral()) return repeat(interp, a, b.as_int());
    if ((b.is_string() || b.is_list()) && a.is_integral()) return repeat(interp, b, a.as_int());
  }
  if (op == BinaryOp::kMod && a.is_string()) {
    std::string s = percent_format(interp, a.as_string(), b);
    return interp.make_string(std::move(s), a.is_markup());
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  static const char* kSymbols[] = {"+", "-", "*", "/", "//", "%", "** or pow()"};
  if (!a.is_number() || !b.is_number()) fail_type(kSymbols[static_cast<int>(op)], a, b);
  const bool ints = a.is_integral() && b.is_integral();
  switch (op) {
    case BinaryOp::kSub:
      if (ints) {
        int64_t r;
        if (!checked_sub(a.as_int(), b.as_int(), &r)) fail_integer_overflow();
        return Value::integer(r);
      }
      return Value::number(a.as_double() - b.as_double());
    case BinaryOp::kMul:
      if (ints) {
        int64_t r;
        if (!checked_mul(a.as_int(), b.as_int(), &r)) fail_integer_overflow();
        return Value::integer(r);
      }
      return Value::number(a.as_double() * b.as_double());
    case BinaryOp::kDiv:
      if (b.as_double() == 0.0) {
        throw_runtime(ints ? "division by zero" : "float division by zero");
      }
      return Value::number(a.as_double() / b.as_double());
    case BinaryOp::kFloorDiv:
      if (ints) {
        if (b.as_int() == 0) throw_runtime("integer division or modulo by zero");
        return Value::integer(floor_div(a.as_int(), b.as_int()));
      }
      if (b.as_double() == 0.0) throw_runtime("float floor division by zero");
      return Value::number(std::floor(a.as_double() / b.as_double()));
    case BinaryOp::kMod:
      if (ints) {
        if (b.as_int() == 0) throw_runtime("integer division or modulo by zero");
        return Value::integer(floor_mod(a.as_int(), b.as_int()));
      }
      if (b.as_double() == 0.0) throw_runtime("float modulo");
      return Value::number(float_mod(a.as_double(), b.as_double()));
    case BinaryOp::kPow:
      if (ints && b.as_int() >= 0) {
        int64_t base = a.as_int();
        int64_t e = b.as_int();
        int64_t r = 1;
        while (e > 0) {
          if (e & 1) {
            if (!checked_mul(r, base, &r)) fail_integer_overflow();
          }
          e >>= 1;
          if (e > 0 && !checked_mul(base, base, &base)) fail_integer_overflow();
        }
        return Value::integer(r);
      }
      if (a.as_double() == 0.0 && b.as_double() < 0) {
        throw_runtime("0.0 cannot be raised to a negative power");
      }
      return Value::number(std::pow(a.as_double(), b.as_double()));
    default:
      break;
  }
  fail_type("?", a, b);
}

}  // namespace

Value binary_operator(Interpreter& interp, BinaryOp op, const Value& a, const Value& b) {
  return binary(interp, op, a, b);
}

}  // namespace strata::jinja
