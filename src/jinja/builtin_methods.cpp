// Methods of Python's str, list, tuple and dict as the sandbox exposes them:
// read-only methods are safe; list.pop/clear mutate (Jinja's
// ImmutableSandboxedEnvironment lets them through); every other mutating
// method is refused with Jinja's SecurityError message.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/py_format.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "jinja/value_format.h"

namespace strata::jinja {
namespace {

constexpr std::string_view kStrMethods[] = {
    "capitalize", "casefold",   "center",       "count",        "endswith",  "find",
    "format",     "format_map", "index",        "isalnum",      "isalpha",   "isascii",
    "isdecimal",  "isdigit",    "isidentifier", "islower",      "isnumeric", "isprintable",
    "isspace",    "istitle",    "isupper",      "join",         "ljust",     "lower",
    "lstrip",     "partition",  "removeprefix", "removesuffix", "replace",   "rfind",
    "rindex",     "rjust",      "rpartition",   "rsplit",       "rstrip",    "split",
    "splitlines", "startswith", "strip",        "swapcase",     "title",     "upper",
    "zfill",      "expandtabs"};
constexpr std::string_view kMarkupMethods[] = {"striptags", "unescape", "escape"};
constexpr std::string_view kDictSafe[] = {"get", "keys", "values", "items", "copy"};
constexpr std::string_view kDictUnsafe[] = {"pop", "popitem", "setdefault", "update", "clear"};
constexpr std::string_view kListSafe[] = {"index", "count", "copy", "pop", "clear"};
constexpr std::string_view kListUnsafe[] = {"append", "extend",  "insert",
                                            "remove", "reverse", "sort"};
constexpr std::string_view kTupleSafe[] = {"index", "count"};

template <size_t N>
bool in(const std::string_view (&names)[N], std::string_view name) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

const std::string& str_arg(const Value& v, std::string_view method) {
  if (!v.is_string()) {
    if (v.is_undefined()) fail_undefined(v);
    throw_runtime(std::string(method) + "() argument must be str, not " + type_name(v));
  }
  return v.as_string();
}

// Clamps Python start/end arguments to [0, n].
void clamp_range(const ArgBinder& b, size_t start_slot, int64_t n, int64_t* start, int64_t* end) {
  *start = 0;
  *end = n;
  auto get = [&](size_t slot, int64_t* out) {
    const Value* v = b.get(slot);
    if (!v || v->is_none()) return;
    int64_t i = to_int_arg(*v, "slice index");
    if (i < 0) i = std::max<int64_t>(0, i + n);
    *out = std::min(i, n);
  };
  get(start_slot, start);
  get(start_slot + 1, end);
}

bool affix_match(const Value& self, CallArgs& args, bool prefix, std::string_view method) {
  ArgBinder b(method, args, {"prefix", "start", "end"});
  if (!b.get(0)) throw_runtime(std::string(method) + "() takes at least 1 argument (0 given)");
  const std::string& s = self.as_string();
  int64_t start, end;
  clamp_range(b, 1, static_cast<int64_t>(py::length(s)), &start, &end);
  std::string window = py::slice(s, true, start, true, end, 1);
  if (start > end) return false;
  auto test = [&](const Value& v) {
    const std::string& a = str_arg(v, method);
    if (a.size() > window.size()) return false;
    return prefix ? window.compare(0, a.size(), a) == 0
                  : window.compare(window.size() - a.size(), a.size(), a) == 0;
  };
  const Value& p = *b.get(0);
  if (p.is_tuple()) {
    for (const Value& v : p.as_list()) {
      if (test(v)) return true;
    }
    return false;
  }
  if (!p.is_string()) {
    throw_runtime(std::string(method) + " first arg must be str or a tuple of str, not " +
                  type_name(p));
  }
  return test(p);
}

Value string_list(Interpreter& interp, std::vector<std::string> parts, bool markup) {
  std::vector<Value> out;
  out.reserve(parts.size());
  interp.charge_items(parts.size());
  for (auto& p : parts)
    out.push_back(markup ? Value::markup(std::move(p)) : Value::string(std::move(p)));
  return Value::list(std::move(out));
}

// ---- per-type methods ----

Value str_method(Interpreter& interp, const Value& self, const std::string& name, CallArgs& args) {
  const std::string& s = self.as_string();
  const bool mk = self.is_markup();
  auto result = [&](std::string r) { return interp.make_string(std::move(r), mk); };
  auto no_args = [&]() {
    if (!args.positional.empty() || !args.keywords.empty()) {
      throw_runtime("str." + name + "() takes no arguments (" +
                    std::to_string(args.positional.size() + args.keywords.size()) + " given)");
    }
  };
  if (name == "upper") return no_args(), result(py::upper(s));
  if (name == "lower" || name == "casefold") return no_args(), result(py::lower(s));
  if (name == "title") return no_args(), result(py::title(s));
  if (name == "capitalize") return no_args(), result(py::capitalize(s));
  if (name == "swapcase") return no_args(), result(py::swapcase(s));
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgBinder b(name, args, {"chars"});
    const Value* chars = b.get(0);
    std::string set;
    if (chars && !chars->is_none()) set = str_arg(*chars, name);
    const bool has = chars && !chars->is_none();
    return result(
        std::string(py::strip(s, has ? &set : nullptr, name != "rstrip", name != "lstrip")));
  }
  if (name == "split" || name == "rsplit") {
    ArgBinder b(name, args, {"sep", "maxsplit"});
    const Value* sep = b.get(0);
    std::string sep_text;
    const bool has_sep = sep && !sep->is_none();
    if (has_sep) {
      sep_text = str_arg(*sep, name);
      if (sep_text.empty()) throw_runtime("empty separator");
    }
    const int64_t maxsplit = b.get(1) ? to_int_arg(*b.get(1), "maxsplit") : -1;
    return string_list(interp,
                       name == "split" ? py::split(s, has_sep ? &sep_text : nullptr, maxsplit)
                                       : py::rsplit(s, has_sep ? &sep_text : nullptr, maxsplit),
                       mk);
  }
  if (name == "splitlines") {
    ArgBinder b(name, args, {"keepends"});
    return string_list(interp, py::splitlines(s, b.get(0) && truthy(*b.get(0))), mk);
  }
  if (name == "startswith") return Value::boolean(affix_match(self, args, true, name));
  if (name == "endswith") return Value::boolean(affix_match(self, args, false, name));
  if (name == "replace") {
    ArgBinder b(name, args, {"old", "new", "count"});
    if (!b.get(0) || !b.get(1)) throw_runtime("replace expected at least 2 arguments");
    const int64_t count = b.get(2) ? to_int_arg(*b.get(2), "count") : -1;
    const std::string& old_text = str_arg(*b.get(0), name);
    const std::string& new_text = str_arg(*b.get(1), name);
    if (!old_text.empty() && new_text.size() > old_text.size()) {
      // Bound the result before building it.
      const size_t hits = static_cast<size_t>(py::count(s, old_text));
      if (s.size() + hits * (new_text.size() - old_text.size()) >
          interp.options().limits.max_output_bytes) {
        throw_limit("template built a string of more than " +
                    std::to_string(interp.options().limits.max_output_bytes) + " bytes");
      }
    } else if (old_text.empty() &&
               (py::length(s) + 1) * new_text.size() > interp.options().limits.max_output_bytes) {
      throw_limit("template built a string of more than " +
                  std::to_string(interp.options().limits.max_output_bytes) + " bytes");
    }
    return result(py::replace(s, old_text, new_text, count));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    ArgBinder b(name, args, {"sub", "start", "end"});
    if (!b.get(0)) throw_runtime(name + "() takes at least 1 argument (0 given)");
    const std::string& sub = str_arg(*b.get(0), name);
    int64_t start, end;
    const auto n = static_cast<int64_t>(py::length(s));
    clamp_range(b, 1, n, &start, &end);
    if (name == "count") {
      if (start > end) return Value::integer(0);
      return Value::integer(py::count(py::slice(s, true, start, true, end, 1), sub));
    }
    const bool reverse = name[0] == 'r';
    const int64_t at = start > end ? -1 : py::find(s, sub, start, end, reverse);
    if (at < 0 && (name == "index" || name == "rindex")) throw_runtime("substring not found");
    return Value::integer(at);
  }
  if (name == "join") {
    ArgBinder b(name, args, {"iterable"});
    if (!b.get(0)) throw_runtime("str.join() takes exactly one argument (0 given)");
    const std::vector<Value> items = iterate(*b.get(0));
    interp.charge_items(items.size());
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_string()) {
        throw_runtime("sequence item " + std::to_string(i) + ": expected str instance, " +
                      type_name(items[i]) + " found");
      }
      if (i > 0) out += s;
      out += items[i].as_string();
      if (out.size() > interp.options().limits.max_output_bytes) return result(std::move(out));
    }
    return result(std::move(out));
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    ArgBinder b(name, args, {"width", "fillchar"});
    if (!b.get(0)) throw_runtime(name + "() takes at least 1 argument (0 given)");
    const int64_t width = to_int_arg(*b.get(0), "width");
    if (width > static_cast<int64_t>(interp.options().limits.max_output_bytes)) {
      throw_limit("template built a string of more than " +
                  std::to_string(interp.options().limits.max_output_bytes) + " bytes");
    }
    char32_t fill = ' ';
    if (b.get(1)) {
      const std::string& f = str_arg(*b.get(1), name);
      if (py::length(f) != 1)
        throw_runtime("The fill character must be exactly one character long");
      size_t pos = 0;
      fill = py::next_code_point(f, &pos);
    }
    return result(py::pad(s, width, fill, name == "center" ? 0 : name == "ljust" ? -1 : 1));
  }
  if (name == "zfill") {
    ArgBinder b(name, args, {"width"});
    if (!b.get(0)) throw_runtime("zfill() takes exactly one argument (0 given)");
    const int64_t width = to_int_arg(*b.get(0), "width");
    if (width > static_cast<int64_t>(interp.options().limits.max_output_bytes)) {
      throw_limit("template built a string of more than " +
                  std::to_string(interp.options().limits.max_output_bytes) + " bytes");
    }
    return result(py::zfill(s, width));
  }
  if (name == "partition" || name == "rpartition") {
    ArgBinder b(name, args, {"sep"});
    if (!b.get(0)) throw_runtime(name + "() takes exactly one argument (0 given)");
    const std::string& sep = str_arg(*b.get(0), name);
    if (sep.empty()) throw_runtime("empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    std::vector<Value> parts;
    if (at == std::string::npos) {
      if (name == "partition") {
        parts = {result(s), result(""), result("")};
      } else {
        parts = {result(""), result(""), result(s)};
      }
    } else {
      parts = {result(s.substr(0, at)), result(sep), result(s.substr(at + sep.size()))};
    }
    return Value::tuple(std::move(parts));
  }
  if (name == "removeprefix" || name == "removesuffix") {
    ArgBinder b(name, args, {"affix"});
    if (!b.get(0)) throw_runtime(name + "() takes exactly one argument (0 given)");
    const std::string& a = str_arg(*b.get(0), name);
    if (name == "removeprefix") {
      return result(s.compare(0, a.size(), a) == 0 ? s.substr(a.size()) : s);
    }
    return result(a.size() <= s.size() && s.compare(s.size() - a.size(), a.size(), a) == 0
                      ? s.substr(0, s.size() - a.size())
                      : s);
  }
  if (name == "expandtabs") {
    ArgBinder b(name, args, {"tabsize"});
    const int64_t tab = b.get(0) ? to_int_arg(*b.get(0), "tabsize") : 8;
    std::string out;
    int64_t column = 0;
    for (size_t pos = 0; pos < s.size();) {
      const size_t start = pos;
      const char32_t c = py::next_code_point(s, &pos);
      if (c == '\t') {
        if (tab > 0) {
          const int64_t spaces = tab - column % tab;
          if (out.size() + static_cast<size_t>(spaces) > interp.options().limits.max_output_bytes) {
            throw_limit("template built an oversized string");
          }
          out.append(static_cast<size_t>(spaces), ' ');
          column += spaces;
        }
      } else {
        out.append(s, start, pos - start);
        column = (c == '\n' || c == '\r') ? 0 : column + 1;
      }
    }
    return result(std::move(out));
  }
  if (name == "format" || name == "format_map") {
    if (name == "format_map") {
      if (!args.keywords.empty()) throw_runtime("format_map() takes no keyword arguments");
      if (args.positional.size() != 1) {
        throw_runtime("format_map() takes exactly one argument (" +
                      std::to_string(args.positional.size()) + " given)");
      }
      const Value mapping = args.positional[0];
      if (!mapping.is_dict()) throw_runtime("format_map() argument must be a mapping");
      CallArgs kw;
      for (const auto& [k, v] : mapping.as_dict().entries()) {
        if (k.is_string()) kw.keywords.emplace_back(k.as_string(), v);
      }
      return result(str_format(interp, s, kw));
    }
    return result(str_format(interp, s, args));
  }
  if (name == "striptags" || name == "unescape" || name == "escape") {
    no_args();
    if (name == "escape") return interp.make_string(py::escape_html(s), true);
    std::string out = s;
    if (name == "striptags") {
      std::string stripped;
      bool in_tag = false;
      for (char c : s) {
        if (c == '<') in_tag = true;
        if (!in_tag) stripped += c;
        if (c == '>') in_tag = false;
      }
      out = std::string();
      for (const std::string& w : py::split(stripped, nullptr, -1)) {
        if (!out.empty()) out += ' ';
        out += w;
      }
    }
    for (auto [from, to] :
         std::initializer_list<std::pair<const char*, const char*>>{{"&lt;", "<"},
                                                                    {"&gt;", ">"},
                                                                    {"&#34;", "\""},
                                                                    {"&quot;", "\""},
                                                                    {"&#39;", "'"},
                                                                    {"&amp;", "&"}}) {
      out = py::replace(out, from, to, -1);
    }
    return interp.make_string(std::move(out));
  }
  // The predicates.
  no_args();
  bool r = false;
  if (name == "isalnum")
    r = py::all_alnum(s);
  else if (name == "isalpha")
    r = py::all_alpha(s);
  else if (name == "isascii")
    r = py::is_ascii(s);
  else if (name == "isdecimal")
    r = py::all_decimal(s);
  else if (name == "isdigit" || name == "isnumeric")
    r = py::all_digit(s);
  else if (name == "islower")
    r = py::is_lower_string(s);
  else if (name == "isupper")
    r = py::is_upper_string(s);
  else if (name == "istitle")
    r = py::is_title_string(s);
  else if (name == "isspace")
    r = py::all_space(s);
  else if (name == "isprintable") {
    r = true;
    for (size_t pos = 0; pos < s.size();) r = r && py::is_printable(py::next_code_point(s, &pos));
  } else if (name == "isidentifier") {
    r = !s.empty() && !(s[0] >= '0' && s[0] <= '9');
    for (size_t pos = 0; pos < s.size();) {
      const char32_t c = py::next_code_point(s, &pos);
      r = r && (c == '_' || py::is_alnum(c));
    }
  } else {
    throw_runtime("'str' object has no attribute '" + name + "'");
  }
  return Value::boolean(r);
}

Value list_method(Interpreter& interp, const Value& self, const std::string& name, CallArgs& args) {
  const auto& items = self.as_list();
  if (name == "index" || name == "count") {
    ArgBinder b(name, args, {"value", "start", "stop"});
    if (!b.get(0)) throw_runtime(name + "() takes at least 1 argument (0 given)");
    interp.charge_items(items.size());
    if (name == "count") {
      int64_t n = 0;
      for (const Value& v : items) n += equal(v, *b.get(0)) ? 1 : 0;
      return Value::integer(n);
    }
    int64_t start, end;
    clamp_range(b, 1, static_cast<int64_t>(items.size()), &start, &end);
    for (int64_t i = start; i < end; ++i) {
      if (equal(items[static_cast<size_t>(i)], *b.get(0))) return Value::integer(i);
    }
    throw_runtime(to_repr(*b.get(0), interp.max_string_bytes()) + " is not in list");
  }
  if (name == "copy") {
    if (!args.positional.empty() || !args.keywords.empty())
      throw_runtime("copy() takes no arguments");
    return Value::list(items);
  }
  // pop / clear change the list in place, seen through every reference,
  // as in Python.
  auto& mutable_items = const_cast<std::vector<Value>&>(items);
  if (name == "clear") {
    if (!args.positional.empty() || !args.keywords.empty())
      throw_runtime("clear() takes no arguments");
    mutable_items.clear();
    return Value::none();
  }
  if (name == "pop") {
    if (!args.keywords.empty()) throw_runtime("pop() takes no keyword arguments");
    if (args.positional.size() > 1) throw_runtime("pop expected at most 1 argument");
    if (items.empty()) throw_runtime("pop from empty list");
    int64_t i = args.positional.empty() ? -1 : to_int_arg(args.positional[0], "index");
    const auto n = static_cast<int64_t>(items.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw_runtime("pop index out of range");
    Value v = std::move(mutable_items[static_cast<size_t>(i)]);
    mutable_items.erase(mutable_items.begin() + i);
    return v;
  }
  throw_runtime("'list' object has no attribute '" + name + "'");
}

Value dict_method(Interpreter& interp, const Value& self, const std::string& name, CallArgs& args) {
  const DictData& d = self.as_dict();
  if (name == "get") {
    ArgBinder b(name, args, {"key", "default"});
    if (!b.get(0)) throw_runtime("get expected at least 1 argument, got 0");
    if (const Value* v = d.find(*b.get(0))) return *v;
    if (b.get(0)->is_list() && !b.get(0)->is_tuple()) throw_runtime("unhashable type: 'list'");
    return b.get_or(1, Value::none());
  }
  if (!args.positional.empty() || !args.keywords.empty()) {
    throw_runtime(name + "() takes no arguments");
  }
  interp.charge_items(d.size());
  if (name == "copy") return self.is_dict() ? Value::dict(d) : self;
  std::vector<Value> out;
  out.reserve(d.size());
  for (const auto& [k, v] : d.entries()) {
    if (name == "keys") {
      out.push_back(k);
    } else if (name == "values") {
      out.push_back(v);
    } else {
      out.push_back(Value::tuple({k, v}));
    }
  }
  return Value::list(std::move(out));
}

}  // namespace

MethodAccess method_access(const Value& self, std::string_view name) {
  switch (self.kind()) {
    case ValueKind::kString:
      if (in(kStrMethods, name)) return MethodAccess::kSafe;
      if (self.is_markup() && in(kMarkupMethods, name)) return MethodAccess::kSafe;
      return MethodAccess::kNone;
    case ValueKind::kList:
      if (self.is_tuple()) return in(kTupleSafe, name) ? MethodAccess::kSafe : MethodAccess::kNone;
      if (in(kListSafe, name)) return MethodAccess::kSafe;
      if (in(kListUnsafe, name)) return MethodAccess::kUnsafe;
      return MethodAccess::kNone;
    case ValueKind::kDict:
      if (in(kDictSafe, name)) return MethodAccess::kSafe;
      if (in(kDictUnsafe, name)) return MethodAccess::kUnsafe;
      return MethodAccess::kNone;
    case ValueKind::kBool:
    case ValueKind::kInt:
      return name == "bit_length" || name == "conjugate" ? MethodAccess::kSafe
                                                         : MethodAccess::kNone;
    case ValueKind::kFloat:
      return name == "is_integer" || name == "conjugate" ? MethodAccess::kSafe
                                                         : MethodAccess::kNone;
    default:
      return MethodAccess::kNone;
  }
}

Value call_method(Interpreter& interp, const Value& self, const std::string& name, CallArgs& args) {
  switch (self.kind()) {
    case ValueKind::kString:
      return str_method(interp, self, name, args);
    case ValueKind::kList:
      return list_method(interp, self, name, args);
    case ValueKind::kDict:
      return dict_method(interp, self, name, args);
    case ValueKind::kBool:
    case ValueKind::kInt:
    case ValueKind::kFloat: {
      if (!args.positional.empty() || !args.keywords.empty()) {
        throw_runtime(name + "() takes no arguments");
      }
      if (name == "conjugate") return self.is_float() ? self : Value::integer(self.as_int());
      if (name == "is_integer") {
        return Value::boolean(std::isfinite(self.as_float()) &&
                              self.as_float() == std::floor(self.as_float()));
      }
      // bit_length
      const int64_t v = self.as_int();
      const uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
      return Value::integer(mag == 0 ? 0 : 64 - __builtin_clzll(mag));
    }
    default:
      throw_runtime("'" + type_name(self) + "' object has no attribute '" + name + "'");
  }
}

}  // namespace strata::jinja
