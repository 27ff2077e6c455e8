#include "jinja/value_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "jinja/py_string.h"
#include "jinja/template_error.h"

namespace strata::jinja {
namespace {

void check_size(const std::string& out, size_t max_bytes) {
  if (out.size() > max_bytes) {
    throw_limit("template built a string of more than " + std::to_string(max_bytes) + " bytes");
  }
}

void append_int(int64_t i, std::string* out) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), i);
  out->append(buf, res.ptr);
}

void append_json_string(const std::string& s, bool ensure_ascii, std::string* out) {
  static const char* kHex = "0123456789abcdef";
  auto hex4 = [&](uint32_t u) {
    *out += "\\u";
    for (int k = 3; k >= 0; --k) *out += kHex[(u >> (4 * k)) & 0xF];
  };
  *out += '"';
  for (size_t pos = 0; pos < s.size();) {
    const auto b = static_cast<uint8_t>(s[pos]);
    if (b >= 0x20 && b < 0x7F && b != '"' && b != '\\') {
      *out += static_cast<char>(b);
      ++pos;
      continue;
    }
    switch (b) {
      case '"':
        *out += "\\\"";
        ++pos;
        continue;
      case '\\':
        *out += "\\\\";
        ++pos;
        continue;
      case '\n':
        *out += "\\n";
        ++pos;
        continue;
      case '\r':
        *out += "\\r";
        ++pos;
        continue;
      case '\t':
        *out += "\\t";
        ++pos;
        continue;
      case '\b':
        *out += "\\b";
        ++pos;
        continue;
      case '\f':
        *out += "\\f";
        ++pos;
        continue;
      default:
        break;
    }
    if (b < 0x20) {
      hex4(b);
      ++pos;
      continue;
    }
    const size_t start = pos;
    const char32_t cp = py::next_code_point(s, &pos);
    if (!ensure_ascii || cp >= 0x110000) {
      out->append(s, start, pos - start);
    } else if (cp < 0x10000) {
      hex4(cp);
    } else {
      const uint32_t v = cp - 0x10000;
      hex4(0xD800 + (v >> 10));
      hex4(0xDC00 + (v & 0x3FF));
    }
  }
  *out += '"';
}

void append_json_float(double d, std::string* out) {
  if (std::isnan(d)) {
    *out += "NaN";
  } else if (std::isinf(d)) {
    *out += d > 0 ? "Infinity" : "-Infinity";
  } else {
    *out += float_repr(d);
  }
}

struct JsonWriter {
  const JsonOptions& options;
  std::string* out;
  std::string item_sep;
  std::string key_sep;
  size_t max_bytes;

  void newline(int level) {
    *out += '\n';
    for (int i = 0; i < level; ++i) *out += options.indent;
  }

  void write_key(const Value& k) {
    switch (k.kind()) {
      case ValueKind::kString:
        append_json_string(k.as_string(), options.ensure_ascii, out);
        return;
      case ValueKind::kInt:
        *out += '"';
        append_int(k.as_int(), out);
        *out += '"';
        return;
      case ValueKind::kFloat:
        *out += '"';
        append_json_float(k.as_float(), out);
        *out += '"';
        return;
      case ValueKind::kBool:
        *out += k.as_bool() ? "\"true\"" : "\"false\"";
        return;
      case ValueKind::kNone:
        *out += "\"null\"";
        return;
      default:
        throw_runtime("keys must be str, int, float, bool or None, not " + type_name(k));
    }
  }

  void write(const Value& v, int level) {
    switch (v.kind()) {
      case ValueKind::kNone:
        *out += "null";
        return;
      case ValueKind::kBool:
        *out += v.as_bool() ? "true" : "false";
        return;
      case ValueKind::kInt:
        append_int(v.as_int(), out);
        return;
      case ValueKind::kFloat:
        append_json_float(v.as_float(), out);
        return;
      case ValueKind::kString:
        append_json_string(v.as_string(), options.ensure_ascii, out);
        return;
      case ValueKind::kList: {
        const auto& items = v.as_list();
        if (items.empty()) {
          *out += "[]";
          return;
        }
        *out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) *out += item_sep;
          if (options.has_indent) newline(level + 1);
          write(items[i], level + 1);
          check_size(*out, max_bytes);
        }
        if (options.has_indent) newline(level);
        *out += ']';
        return;
      }
      case ValueKind::kDict: {
        const auto& d = v.as_dict();
        if (d.empty()) {
          *out += "{}";
          return;
        }
        std::vector<const std::pair<Value, Value>*> entries;
        entries.reserve(d.size());
        for (const auto& e : d.entries()) entries.push_back(&e);
        if (options.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](auto* a, auto* b) { return less(a->first, b->first); });
        }
        *out += '{';
        bool first = true;
        for (const auto* e : entries) {
          if (!first) *out += item_sep;
          first = false;
          if (options.has_indent) newline(level + 1);
          write_key(e->first);
          *out += key_sep;
          write(e->second, level + 1);
          check_size(*out, max_bytes);
        }
        if (options.has_indent) newline(level);
        *out += '}';
        return;
      }
      case ValueKind::kUndefined:
      case ValueKind::kObject:
        throw_runtime("Object of type " + type_name(v) + " is not JSON serializable");
    }
  }
};

}  // namespace

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  std::string out;
  if (std::signbit(d)) {
    out += '-';
    d = -d;
  }
  if (d == 0.0) return out + "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  int exp10 = 0;
  std::from_chars(sci.data() + e + 1 + (sci[e + 1] == '+' ? 1 : 0), sci.data() + sci.size(), exp10);
  const int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  const int n = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= n) {
      out += digits;
      out.append(static_cast<size_t>(decpt - n), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out += '.';
      out += digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits[0];
  if (n > 1) {
    out += '.';
    out += digits.substr(1);
  }
  const int x = decpt - 1;
  out += x < 0 ? "e-" : "e+";
  const int ax = x < 0 ? -x : x;
  if (ax < 10) out += '0';
  out += std::to_string(ax);
  return out;
}

void append_str(const Value& v, std::string* out, size_t max_bytes) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
      return;
    case ValueKind::kString:
      *out += v.as_string();
      check_size(*out, max_bytes);
      return;
    case ValueKind::kInt:
      append_int(v.as_int(), out);
      return;
    default:
      append_repr(v, out, max_bytes);
  }
}

std::string to_str(const Value& v, size_t max_bytes) {
  if (v.is_string()) {
    check_size(v.as_string(), max_bytes);
    return v.as_string();
  }
  std::string out;
  append_str(v, &out, max_bytes);
  return out;
}

void append_repr(const Value& v, std::string* out, size_t max_bytes) {
  append_repr_at(v, out, max_bytes, 0);
}

void append_repr_at(const Value& v, std::string* out, size_t max_bytes, int depth) {
  if (depth > kMaxValueDepth) {
    throw_limit("values nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
  }
  switch (v.kind()) {
    case ValueKind::kUndefined:
      *out += "Undefined";
      return;
    case ValueKind::kNone:
      *out += "None";
      return;
    case ValueKind::kBool:
      *out += v.as_bool() ? "True" : "False";
      return;
    case ValueKind::kInt:
      append_int(v.as_int(), out);
      return;
    case ValueKind::kFloat:
      *out += float_repr(v.as_float());
      return;
    case ValueKind::kString:
      if (v.is_markup()) {
        *out += "Markup(";
        py::append_repr(v.as_string(), out);
        *out += ')';
      } else {
        py::append_repr(v.as_string(), out);
      }
      check_size(*out, max_bytes);
      return;
    case ValueKind::kList: {
      const auto& items = v.as_list();
      *out += v.is_tuple() ? '(' : '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) *out += ", ";
        append_repr_at(items[i], out, max_bytes, depth + 1);
        check_size(*out, max_bytes);
      }
      if (v.is_tuple() && items.size() == 1) *out += ',';
      *out += v.is_tuple() ? ')' : ']';
      return;
    }
    case ValueKind::kDict: {
      *out += '{';
      bool first = true;
      for (const auto& [k, value] : v.as_dict().entries()) {
        if (!first) *out += ", ";
        first = false;
        append_repr_at(k, out, max_bytes, depth + 1);
        *out += ": ";
        append_repr_at(value, out, max_bytes, depth + 1);
        check_size(*out, max_bytes);
      }
      *out += '}';
      return;
    }
    case ValueKind::kObject:
      v.as_object()->append_repr(out, max_bytes, depth + 1);
      check_size(*out, max_bytes);
      return;
  }
}

std::string to_repr(const Value& v, size_t max_bytes) {
  std::string out;
  append_repr(v, &out, max_bytes);
  return out;
}

void append_json(const Value& v, const JsonOptions& options, std::string* out, size_t max_bytes) {
  JsonWriter w{options, out, {}, {}, max_bytes};
  if (options.has_separators) {
    w.item_sep = options.item_separator;
    w.key_sep = options.key_separator;
  } else {
    w.item_sep = options.has_indent ? "," : ", ";
    w.key_sep = ": ";
  }
  w.write(v, 0);
}

}  // namespace strata::jinja
