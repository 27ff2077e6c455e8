// Shared pieces of the builtins: argument binding, the sandbox's Undefined
// values, namespace and bound-method objects, and Python's `%` formatting.
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
  return "<Namespace " + to_repr(Value::dict(attrs_)) + ">";
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
  info.name = to_repr(key);
  info.name_is_key = true;
  return Value::undefined(std::move(info));
}

// ---- printf-style formatting ----
namespace {

struct Spec {
  bool left = false, plus = false, space = false, alt = false, zero = false;
  int width = -1;
  int precision = -1;
  char conv = 's';
};

std::string pad_to(std::string body, const Spec& s, bool numeric) {
  const auto len = static_cast<int>(py::length(body));
  if (s.width <= len) return body;
  const auto fill = static_cast<size_t>(s.width - len);
  if (s.left) return body + std::string(fill, ' ');
  if (numeric && s.zero) {
    // Zeros go after the sign and the 0x prefix.
    size_t at = 0;
    if (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) at = 1;
    if (body.size() > at + 1 && body[at] == '0' &&
        (body[at + 1] == 'x' || body[at + 1] == 'X' || body[at + 1] == 'o')) {
      at += 2;
    }
    return body.substr(0, at) + std::string(fill, '0') + body.substr(at);
  }
  return std::string(fill, ' ') + body;
}

std::string format_int(int64_t v, const Spec& s) {
  const bool neg = v < 0;
  const uint64_t mag = neg ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  std::string digits;
  const char conv = s.conv;
  const unsigned base = (conv == 'x' || conv == 'X') ? 16 : conv == 'o' ? 8 : 10;
  const char* alphabet = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
  uint64_t m = mag;
  do {
    digits.insert(digits.begin(), alphabet[m % base]);
    m /= base;
  } while (m > 0);
  if (s.precision > 0 && static_cast<int>(digits.size()) < s.precision) {
    digits.insert(0, static_cast<size_t>(s.precision) - digits.size(), '0');
  }
  std::string prefix;
  if (s.alt && base == 16) prefix = conv == 'X' ? "0X" : "0x";
  if (s.alt && base == 8) prefix = "0o";
  const std::string sign = neg ? "-" : s.plus ? "+" : s.space ? " " : "";
  return pad_to(sign + prefix + digits, s, true);
}

std::string format_float(double v, const Spec& s) {
  char conv = s.conv;
  if (std::isinf(v) || std::isnan(v)) {
    std::string body = std::isnan(v) ? "nan" : (v < 0 ? "-inf" : "inf");
    if (std::isupper(static_cast<unsigned char>(conv))) body = py::upper(body);
    if (!std::signbit(v) || std::isnan(v)) {
      if (s.plus)
        body = "+" + body;
      else if (s.space)
        body = " " + body;
    }
    Spec no_zero = s;
    no_zero.zero = false;
    return pad_to(body, no_zero, true);
  }
  std::string fmt = "%";
  if (s.plus) fmt += '+';
  if (s.space) fmt += ' ';
  if (s.alt) fmt += '#';
  fmt += '.';
  fmt += std::to_string(s.precision < 0 ? 6 : s.precision);
  fmt += conv;
  char buf[512];
  const int n = std::snprintf(buf, sizeof(buf), fmt.c_str(), v);
  std::string body;
  if (n >= 0 && static_cast<size_t>(n) < sizeof(buf)) {
    body.assign(buf, static_cast<size_t>(n));
  } else {
    std::vector<char> big(static_cast<size_t>(n) + 1);
    std::snprintf(big.data(), big.size(), fmt.c_str(), v);
    body.assign(big.data(), static_cast<size_t>(n));
  }
  return pad_to(body, s, true);
}

}  // namespace

std::string percent_format(Interpreter& interp, const std::string& format, const Value& args) {
  std::vector<Value> positional;
  const Value* mapping = nullptr;
  if (args.is_tuple()) {
    positional = args.as_list();
  } else {
    positional.push_back(args);
    if (args.is_dict()) mapping = &args;
  }
  size_t next = 0;
  bool used_mapping = false;
  auto take = [&]() -> Value {
    if (next >= positional.size()) throw_runtime("not enough arguments for format string");
    return positional[next++];
  };
  std::string out;
  size_t i = 0;
  while (i < format.size()) {
    const char c = format[i];
    if (c != '%') {
      out += c;
      ++i;
      continue;
    }
    ++i;
    if (i >= format.size()) throw_runtime("incomplete format");
    Value arg;
    bool have_arg = false;
    if (format[i] == '(') {
      if (!mapping) throw_runtime("format requires a mapping");
      int depth = 1;
      const size_t start = ++i;
      while (i < format.size() && depth > 0) {
        if (format[i] == '(') ++depth;
        if (format[i] == ')') --depth;
        ++i;
      }
      if (depth > 0) throw_runtime("incomplete format key");
      const std::string key = format.substr(start, i - 1 - start);
      const Value* v = mapping->as_dict().find(key);
      if (!v) throw_runtime("KeyError: '" + key + "'");
      arg = *v;
      have_arg = true;
      used_mapping = true;
    }
    Spec s;
    for (; i < format.size(); ++i) {
      const char f = format[i];
      if (f == '-')
        s.left = true;
      else if (f == '+')
        s.plus = true;
      else if (f == ' ')
        s.space = true;
      else if (f == '#')
        s.alt = true;
      else if (f == '0')
        s.zero = true;
      else
        break;
    }
    auto read_number = [&]() -> int {
      if (i < format.size() && format[i] == '*') {
        ++i;
        const Value w = take();
        return static_cast<int>(to_int_arg(w, "* wants int"));
      }
      int n = 0;
      bool any = false;
      while (i < format.size() && format[i] >= '0' && format[i] <= '9') {
        n = n * 10 + (format[i++] - '0');
        if (n > 1000000) throw_limit("format width too large");
        any = true;
      }
      return any ? n : -1;
    };
    s.width = read_number();
    if (s.width < -1) {
      s.left = true;
      s.width = -s.width;
    }
    if (i < format.size() && format[i] == '.') {
      ++i;
      s.precision = read_number();
      if (s.precision < 0) s.precision = 0;
    }
    while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L')) ++i;
    if (i >= format.size()) throw_runtime("incomplete format");
    s.conv = format[i++];
    if (s.conv == '%') {
      out += '%';
      continue;
    }
    if (!have_arg) arg = take();
    if (arg.is_undefined() && s.conv != 's') fail_undefined(arg);
    std::string piece;
    switch (s.conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string text = s.conv == 's' ? to_str(arg) : to_repr(arg);
        if (s.precision >= 0) text = py::slice(text, false, 0, true, s.precision, 1);
        piece = pad_to(text, s, false);
        break;
      }
      case 'd':
      case 'i':
      case 'u':
        if (arg.is_integral()) {
          piece = format_int(arg.as_int(), s);
        } else if (arg.is_float()) {
          const double d = std::trunc(arg.as_float());
          if (!std::isfinite(d) || std::fabs(d) > 9.2e18) throw_limit("integer beyond 64 bits");
          piece = format_int(static_cast<int64_t>(d), s);
        } else {
          throw_runtime(std::string("%") + s.conv + " format: a real number is required, not " +
                        type_name(arg));
        }
        break;
      case 'x':
      case 'X':
      case 'o':
        if (!arg.is_integral()) {
          throw_runtime(std::string("%") + s.conv + " format: an integer is required, not " +
                        type_name(arg));
        }
        piece = format_int(arg.as_int(), s);
        break;
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G':
        if (!arg.is_number()) {
          throw_runtime("must be real number, not " + type_name(arg));
        }
        piece = format_float(arg.as_double(), s);
        break;
      case 'c':
        if (arg.is_integral()) {
          std::string ch;
          py::append_code_point(static_cast<char32_t>(arg.as_int()), &ch);
          piece = pad_to(ch, s, false);
        } else if (arg.is_string() && py::length(arg.as_string()) == 1) {
          piece = pad_to(arg.as_string(), s, false);
        } else {
          throw_runtime("%c requires int or char");
        }
        break;
      default:
        throw_runtime(std::string("unsupported format character '") + s.conv + "'");
    }
    out += piece;
    interp.charge_bytes(piece.size());
  }
  // Python only complains about unused arguments when they are not a
  // mapping-like object (a dict or a list).
  const bool mapping_like = args.is_dict() || (args.is_list() && !args.is_tuple());
  if (!used_mapping && next < positional.size() && !mapping_like) {
    throw_runtime("not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace strata::jinja
