#include "jinja/py_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "jinja/value_format.h"

namespace strata::jinja {

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
        std::string text = s.conv == 's' ? to_str(arg, interp.max_string_bytes())
                                         : to_repr(arg, interp.max_string_bytes());
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

namespace {

struct FormatSpec {
  char32_t fill = ' ';
  char align = 0;
  char sign = 0;
  bool alt = false;
  bool zero = false;
  int width = -1;
  char grouping = 0;
  int precision = -1;
  char type = 0;
};

FormatSpec parse_spec(const std::string& spec) {
  FormatSpec f;
  const std::vector<char32_t> cps = py::decode(spec);
  size_t i = 0;
  auto is_align = [](char32_t c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (cps.size() >= 2 && is_align(cps[1])) {
    f.fill = cps[0];
    f.align = static_cast<char>(cps[1]);
    i = 2;
  } else if (!cps.empty() && is_align(cps[0])) {
    f.align = static_cast<char>(cps[0]);
    i = 1;
  }
  if (i < cps.size() && (cps[i] == '+' || cps[i] == '-' || cps[i] == ' ')) {
    f.sign = static_cast<char>(cps[i++]);
  }
  if (i < cps.size() && cps[i] == '#') {
    f.alt = true;
    ++i;
  }
  if (i < cps.size() && cps[i] == '0') {
    f.zero = true;
    ++i;
  }
  auto number = [&]() {
    int n = -1;
    while (i < cps.size() && cps[i] >= '0' && cps[i] <= '9') {
      n = (n < 0 ? 0 : n) * 10 + static_cast<int>(cps[i++] - '0');
      if (n > 1000000) throw_limit("format width too large");
    }
    return n;
  };
  f.width = number();
  if (i < cps.size() && (cps[i] == ',' || cps[i] == '_')) f.grouping = static_cast<char>(cps[i++]);
  if (i < cps.size() && cps[i] == '.') {
    ++i;
    f.precision = number();
    if (f.precision < 0) throw_runtime("Format specifier missing precision");
  }
  if (i < cps.size()) f.type = static_cast<char>(cps[i++]);
  if (i < cps.size()) throw_runtime("Invalid format specifier");
  return f;
}

std::string align_text(const std::string& body, const FormatSpec& f, char default_align) {
  const auto len = static_cast<int64_t>(py::length(body));
  if (f.width <= len) return body;
  char align = f.align ? f.align : default_align;
  char32_t fill = f.fill;
  if (!f.align && f.zero) {
    align = '=';
    fill = '0';
  }
  const int64_t total = f.width - len;
  std::string fill_text;
  py::append_code_point(fill, &fill_text);
  auto repeat = [&](int64_t n) {
    std::string out;
    for (int64_t k = 0; k < n; ++k) out += fill_text;
    return out;
  };
  if (align == '<') return body + repeat(total);
  if (align == '>') return repeat(total) + body;
  if (align == '^') return repeat(total / 2) + body + repeat(total - total / 2);
  // '=': padding after the sign.
  size_t at = (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
  if (body.size() > at + 1 && body[at] == '0' &&
      std::string_view("xXobB").find(body[at + 1]) != std::string_view::npos) {
    at += 2;
  }
  return body.substr(0, at) + repeat(total) + body.substr(at);
}

std::string group_digits(const std::string& digits, char sep, int every) {
  std::string out;
  const int n = static_cast<int>(digits.size());
  for (int i = 0; i < n; ++i) {
    if (i > 0 && (n - i) % every == 0) out += sep;
    out += digits[static_cast<size_t>(i)];
  }
  return out;
}

std::string format_value(const Value& v, const std::string& spec, size_t max_bytes) {
  if (spec.empty()) return to_str(v, max_bytes);
  const FormatSpec f = parse_spec(spec);
  if (v.is_string()) {
    if (f.type && f.type != 's')
      throw_runtime(std::string("Unknown format code '") + f.type + "' for object of type 'str'");
    std::string body = v.as_string();
    if (f.precision >= 0) body = py::slice(body, false, 0, true, f.precision, 1);
    return align_text(body, f, '<');
  }
  const bool is_int_type =
      f.type == 0 || std::string_view("bcdoxXn").find(f.type) != std::string_view::npos;
  if (v.is_integral() && is_int_type) {
    const int64_t i = v.as_int();
    const uint64_t mag = i < 0 ? 0 - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
    std::string digits;
    const char type = f.type ? f.type : 'd';
    if (type == 'c') {
      std::string ch;
      py::append_code_point(static_cast<char32_t>(i), &ch);
      return align_text(ch, f, '<');
    }
    const unsigned base = type == 'b'                    ? 2
                          : type == 'o'                  ? 8
                          : (type == 'x' || type == 'X') ? 16
                                                         : 10;
    const char* alphabet = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    uint64_t m = mag;
    do {
      digits.insert(digits.begin(), alphabet[m % base]);
      m /= base;
    } while (m > 0);
    if (f.grouping) digits = group_digits(digits, f.grouping, base == 10 ? 3 : 4);
    std::string prefix;
    if (f.alt && base != 10)
      prefix = std::string("0") + (type == 'X' ? 'X' : type == 'x' ? 'x' : type);
    const std::string sign = i < 0 ? "-" : f.sign == '+' ? "+" : f.sign == ' ' ? " " : "";
    return align_text(sign + prefix + digits, f, '>');
  }
  if (v.is_number()) {
    const double d = v.as_double();
    char type = f.type;
    std::string body;
    if (type == 0 && f.precision < 0) {
      body = v.is_float() ? float_repr(d) : std::to_string(v.as_int());
    } else {
      if (std::string_view("eEfFgG%").find(type ? type : 'g') == std::string_view::npos) {
        throw_runtime(std::string("Unknown format code '") + type + "' for object of type '" +
                      type_name(v) + "'");
      }
      double x = d;
      bool percent = false;
      if (type == '%') {
        x *= 100;
        type = 'f';
        percent = true;
      }
      const char c = type ? type : 'g';
      char fmt[16];
      std::snprintf(fmt, sizeof(fmt), "%%%s.%d%c", f.alt ? "#" : "",
                    f.precision < 0 ? 6 : f.precision, c);
      char buf[512];
      std::snprintf(buf, sizeof(buf), fmt, std::fabs(x));
      body = buf;
      if (percent) body += '%';
      if (std::signbit(x) && !std::isnan(x))
        body = "-" + body;
      else if (f.sign == '+')
        body = "+" + body;
      else if (f.sign == ' ')
        body = " " + body;
    }
    if (f.grouping) {
      const size_t start =
          (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) ? 1 : 0;
      size_t end = start;
      while (end < body.size() && body[end] >= '0' && body[end] <= '9') ++end;
      body = body.substr(0, start) + group_digits(body.substr(start, end - start), f.grouping, 3) +
             body.substr(end);
    }
    return align_text(body, f, '>');
  }
  throw_runtime("unsupported format string passed to " + type_name(v) + ".__format__");
}

}  // namespace

std::string str_format(Interpreter& interp, const std::string& fmt, CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  bool used_auto = false, used_manual = false;
  auto resolve = [&](const std::string& field) -> Value {
    // field: name or index, then .attr / [key] parts.
    size_t i = 0;
    while (i < field.size() && field[i] != '.' && field[i] != '[') ++i;
    const std::string first = field.substr(0, i);
    Value v;
    if (first.empty()) {
      if (used_manual) {
        throw_runtime("cannot switch from manual field specification to automatic field numbering");
      }
      used_auto = true;
      if (auto_index >= args.positional.size()) {
        throw_runtime("Replacement index " + std::to_string(auto_index) +
                      " out of range for positional args tuple");
      }
      v = args.positional[auto_index++];
    } else if (std::all_of(first.begin(), first.end(),
                           [](char c) { return c >= '0' && c <= '9'; })) {
      if (used_auto) {
        throw_runtime("cannot switch from automatic field numbering to manual field specification");
      }
      used_manual = true;
      const size_t idx = std::stoul(first.size() > 9 ? std::string("999999999") : first);
      if (idx >= args.positional.size()) {
        throw_runtime("Replacement index " + first + " out of range for positional args tuple");
      }
      v = args.positional[idx];
    } else {
      bool found = false;
      for (const auto& [k, val] : args.keywords) {
        if (k == first) {
          v = val;
          found = true;
        }
      }
      if (!found) throw_runtime("KeyError: '" + first + "'");
    }
    while (i < field.size()) {
      if (field[i] == '.') {
        size_t j = ++i;
        while (j < field.size() && field[j] != '.' && field[j] != '[') ++j;
        v = interp.getattr(v, field.substr(i, j - i));
        i = j;
      } else {
        const size_t close = field.find(']', i);
        if (close == std::string::npos) throw_runtime("Missing ']' in format string");
        const std::string key = field.substr(i + 1, close - i - 1);
        const bool numeric = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
          return c >= '0' && c <= '9';
        });
        v = interp.getitem(
            v, numeric ? Value::integer(std::stoll(key.substr(0, 18))) : Value::string(key));
        i = close + 1;
      }
    }
    return v;
  };
  size_t i = 0;
  while (i < fmt.size()) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        i += 2;
        continue;
      }
      throw_runtime("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out += '{';
      i += 2;
      continue;
    }
    // A replacement field; nested braces only inside the spec.
    size_t j = i + 1;
    int depth = 1;
    while (j < fmt.size() && depth > 0) {
      if (fmt[j] == '{') ++depth;
      if (fmt[j] == '}') --depth;
      if (depth > 0) ++j;
    }
    if (j >= fmt.size()) throw_runtime("expected '}' before end of string");
    const std::string field = fmt.substr(i + 1, j - i - 1);
    i = j + 1;
    size_t colon = std::string::npos;
    size_t bang = std::string::npos;
    int bracket = 0;
    for (size_t k = 0; k < field.size(); ++k) {
      if (field[k] == '[') ++bracket;
      if (field[k] == ']') --bracket;
      if (bracket == 0 && field[k] == '!' && bang == std::string::npos &&
          colon == std::string::npos)
        bang = k;
      if (bracket == 0 && field[k] == ':' && colon == std::string::npos) {
        colon = k;
        break;
      }
    }
    const std::string name = field.substr(0, std::min(bang, colon));
    char conversion = 0;
    if (bang != std::string::npos) {
      if (bang + 1 >= field.size() || (colon != std::string::npos && colon != bang + 2)) {
        throw_runtime("expected ':' after conversion specifier");
      }
      conversion = field[bang + 1];
    }
    std::string spec = colon == std::string::npos ? std::string() : field.substr(colon + 1);
    if (spec.find('{') != std::string::npos) {
      CallArgs nested = args;
      spec = str_format(interp, spec, nested);
    }
    Value v = resolve(name);
    if (conversion == 'r' || conversion == 'a') {
      v = Value::string(to_repr(v, interp.max_string_bytes()));
    } else if (conversion == 's') {
      v = Value::string(to_str(v, interp.max_string_bytes()));
    } else if (conversion != 0) {
      throw_runtime(std::string("Unknown conversion specifier ") + conversion);
    }
    const std::string piece = format_value(v, spec, interp.max_string_bytes());
    interp.charge_bytes(piece.size());
    out += piece;
  }
  return out;
}

}  // namespace strata::jinja
