// Jinja2 3.1's builtin filters (jinja2/filters.py), with transformers'
// `tojson` (json.dumps with ensure_ascii=False, indent, separators,
// sort_keys) in place of Jinja's HTML-safe one. Filters Jinja implements as
// generators (items, map, select, reject, selectattr, rejectattr, unique,
// batch, slice, reverse of a sequence) return one-shot iterators, so they
// behave as in Jinja: truthy, no length, consumed by one pass.
//
// Not provided (no chat template uses them, and some are random): groupby,
// pprint, random, urlize, urlencode, wordwrap, xmlattr, filesizeformat.
// A template naming one fails to parse with Jinja's "No filter named".
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/py_format.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "jinja/value_format.h"

namespace strata::jinja {
namespace {

// soft_str(): str(value), keeping Markup.
Value soft_str(Interpreter& interp, const Value& v) {
  if (v.is_string()) return v;
  return interp.make_string(to_str(v, interp.max_string_bytes()));
}

Value iterator(std::string kind, std::vector<Value> items) {
  return Value::object(std::make_shared<IteratorObject>(std::move(kind), std::move(items)));
}

std::vector<Value> items_of(Interpreter& interp, const Value& v) {
  if (const auto n = length_of(v)) interp.check_items(static_cast<size_t>(*n));
  std::vector<Value> items = iterate(v);
  interp.charge_items(items.size());
  return items;
}

// Jinja's _prepare_attribute_parts + make_attrgetter: "a.b.0" looked up
// with environment.getitem, integer parts as integers.
class AttrGetter {
 public:
  AttrGetter(const Value* attribute, bool lower, const Value* fallback)
      : lower_(lower), fallback_(fallback && !fallback->is_none() ? fallback : nullptr) {
    if (!attribute || attribute->is_none()) return;
    if (attribute->is_string()) {
      for (const std::string& part : py::split(attribute->as_string(), &kDot, -1)) {
        if (!part.empty() &&
            std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
          parts_.push_back(Value::integer(std::strtoll(part.substr(0, 18).c_str(), nullptr, 10)));
        } else {
          parts_.push_back(Value::string(part));
        }
      }
    } else {
      parts_.push_back(*attribute);
    }
  }

  Value operator()(Interpreter& interp, Value item) const {
    for (const Value& part : parts_) {
      item = interp.getitem(item, part);
      if (fallback_ && item.is_undefined()) item = *fallback_;
    }
    if (lower_ && item.is_string()) item = Value::string(py::lower(item.as_string()));
    return item;
  }

 private:
  static inline const std::string kDot = ".";
  std::vector<Value> parts_;
  bool lower_;
  const Value* fallback_;
};

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("abs", args, {});
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) throw_limit("integer result beyond 64 bits");
    return Value::integer(std::llabs(v.as_int()));
  }
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  if (v.is_undefined()) fail_undefined(v);
  throw_runtime("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_attr(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("attr", args, {"name"});
  if (!b.get(0)) throw_runtime("attr() missing required argument 'name'");
  const std::string name = to_str(*b.get(0), interp.max_string_bytes());
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_object() || method_access(v, name) != MethodAccess::kNone) {
    if (v.is_object() && !v.as_object()->get_attr(name)) return missing_attribute(v, name);
    return interp.getattr(v, name);
  }
  return missing_attribute(v, name);
}

Value f_batch(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("batch", args, {"linecount", "fill_with"});
  if (!b.get(0)) throw_runtime("batch() missing required argument 'linecount'");
  const int64_t n = to_int_arg(*b.get(0), "linecount");
  const Value* fill = b.get(1);
  std::vector<Value> out;
  std::vector<Value> tmp;
  for (Value& item : items_of(interp, v)) {
    if (static_cast<int64_t>(tmp.size()) == n) {
      out.push_back(Value::list(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(std::move(item));
  }
  if (!tmp.empty()) {
    if (fill && !fill->is_none()) {
      while (static_cast<int64_t>(tmp.size()) < n) {
        interp.charge_items(1);
        tmp.push_back(*fill);
      }
    }
    out.push_back(Value::list(std::move(tmp)));
  }
  return iterator("generator", std::move(out));
}

Value f_slice(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("slice", args, {"slices", "fill_with"});
  if (!b.get(0)) throw_runtime("slice() missing required argument 'slices'");
  const int64_t slices = to_int_arg(*b.get(0), "slices");
  if (slices <= 0) throw_runtime("integer division or modulo by zero");
  interp.charge_items(static_cast<size_t>(std::min<int64_t>(slices, 1 << 30)));
  const Value* fill = b.get(1);
  const std::vector<Value> seq = items_of(interp, v);
  const auto length = static_cast<int64_t>(seq.size());
  const int64_t per = length / slices;
  const int64_t extra = length % slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t k = 0; k < slices; ++k) {
    const int64_t start = offset + k * per;
    if (k < extra) ++offset;
    const int64_t end = offset + (k + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (fill && !fill->is_none() && k >= extra) tmp.push_back(*fill);
    out.push_back(Value::list(std::move(tmp)));
  }
  return iterator("generator", std::move(out));
}

Value f_capitalize(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("capitalize", args, {});
  const Value s = soft_str(interp, v);
  return interp.make_string(py::capitalize(s.as_string()), s.is_markup());
}

Value f_center(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("center", args, {"width"});
  const int64_t width = b.get(0) ? to_int_arg(*b.get(0), "width") : 80;
  if (width > static_cast<int64_t>(interp.options().limits.max_output_bytes)) {
    throw_limit("template built an oversized string");
  }
  const Value s = soft_str(interp, v);
  return interp.make_string(py::pad(s.as_string(), width, ' ', 0), s.is_markup());
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("length", args, {});
  const auto n = length_of(v);
  if (!n) throw_runtime("object of type '" + type_name(v) + "' has no len()");
  return Value::integer(*n);
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("default", args, {"default_value", "boolean"});
  const bool boolean = b.get(1) && truthy(*b.get(1));
  if (v.is_undefined() || (boolean && !truthy(v))) return b.get_or(0, Value::string(""));
  return v;
}

Value f_dictsort(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("dictsort", args, {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = b.get(0) && truthy(*b.get(0));
  const std::string by = b.get(1) ? to_str(*b.get(1), interp.max_string_bytes()) : "key";
  const bool reverse = b.get(2) && truthy(*b.get(2));
  if (by != "key" && by != "value") {
    throw_runtime("You can only sort by either \"key\" or \"value\"");
  }
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_dict()) throw_runtime("'" + type_name(v) + "' object has no attribute 'items'");
  const size_t pos = by == "key" ? 0 : 1;
  struct Entry {
    Value key;
    Value pair;
  };
  std::vector<Entry> entries;
  interp.charge_items(v.as_dict().size());
  for (const auto& [k, val] : v.as_dict().entries()) {
    Value sort_key = pos == 0 ? k : val;
    if (!case_sensitive && sort_key.is_string())
      sort_key = Value::string(py::lower(sort_key.as_string()));
    entries.push_back({std::move(sort_key), Value::tuple({k, val})});
  }
  std::stable_sort(entries.begin(), entries.end(), [&](const Entry& a, const Entry& c) {
    return reverse ? less(c.key, a.key) : less(a.key, c.key);
  });
  std::vector<Value> out;
  for (auto& e : entries) out.push_back(std::move(e.pair));
  return Value::list(std::move(out));
}

std::vector<Value> sorted_items(Interpreter& interp, const Value& v, bool reverse,
                                bool case_sensitive, const Value* attribute) {
  // make_multi_attrgetter: "a,b" gives a key list per item.
  std::vector<AttrGetter> getters;
  if (attribute && attribute->is_string()) {
    const std::string comma = ",";
    std::vector<Value> names;
    for (const std::string& p : py::split(attribute->as_string(), &comma, -1)) {
      names.push_back(Value::string(p));
    }
    for (const Value& n : names) getters.emplace_back(&n, !case_sensitive, nullptr);
  } else {
    getters.emplace_back(attribute, !case_sensitive, nullptr);
  }
  std::vector<Value> items = items_of(interp, v);
  std::vector<std::pair<Value, size_t>> keyed;
  keyed.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    std::vector<Value> key;
    for (const AttrGetter& g : getters) key.push_back(g(interp, items[i]));
    keyed.emplace_back(Value::list(std::move(key)), i);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& c) {
    return reverse ? less(c.first, a.first) : less(a.first, c.first);
  });
  std::vector<Value> out;
  out.reserve(items.size());
  for (const auto& [key, i] : keyed) out.push_back(items[i]);
  return out;
}

Value f_sort(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("sort", args, {"reverse", "case_sensitive", "attribute"});
  return Value::list(sorted_items(interp, v, b.get(0) && truthy(*b.get(0)),
                                  b.get(1) && truthy(*b.get(1)), b.get(2)));
}

bool is_hashable_value(const Value& v) {
  if (v.is_dict() || (v.is_list() && !v.is_tuple())) return false;
  if (v.is_tuple()) {
    for (const Value& i : v.as_list()) {
      if (!is_hashable_value(i)) return false;
    }
  }
  return true;
}

Value f_unique(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("unique", args, {"case_sensitive", "attribute"});
  const AttrGetter getter(b.get(1), !(b.get(0) && truthy(*b.get(0))), nullptr);
  std::vector<Value> seen;
  std::vector<Value> out;
  for (Value& item : items_of(interp, v)) {
    const Value key = getter(interp, item);
    if (!is_hashable_value(key)) throw_runtime("unhashable type: '" + type_name(key) + "'");
    bool dup = false;
    for (const Value& s : seen) {
      if (equal(s, key)) {
        dup = true;
        break;
      }
    }
    interp.charge_items(seen.size());
    if (!dup) {
      seen.push_back(key);
      out.push_back(std::move(item));
    }
  }
  return iterator("generator", std::move(out));
}

Value min_or_max(Interpreter& interp, const Value& v, CallArgs& args, bool is_min) {
  ArgBinder b(is_min ? "min" : "max", args, {"case_sensitive", "attribute"});
  const std::vector<Value> items = items_of(interp, v);
  if (items.empty()) return Value::undefined_hint("No aggregated item, sequence was empty.");
  const AttrGetter key(b.get(1), !(b.get(0) && truthy(*b.get(0))), nullptr);
  size_t best = 0;
  Value best_key = key(interp, items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(interp, items[i]);
    if (is_min ? less(k, best_key) : less(best_key, k)) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value f_min(Interpreter& interp, const Value& v, CallArgs& args) {
  return min_or_max(interp, v, args, true);
}
Value f_max(Interpreter& interp, const Value& v, CallArgs& args) {
  return min_or_max(interp, v, args, false);
}

Value f_join(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("join", args, {"d", "attribute"});
  const std::string sep = b.get(0) ? to_str(*b.get(0), interp.max_string_bytes()) : std::string();
  const AttrGetter getter(b.get(1), false, nullptr);
  std::string out;
  bool first = true;
  for (const Value& item : items_of(interp, v)) {
    if (!first) out += sep;
    first = false;
    append_str(b.get(1) ? getter(interp, item) : item, &out, interp.max_string_bytes());
    if (out.size() > interp.options().limits.max_output_bytes) break;
  }
  return interp.make_string(std::move(out));
}

Value f_first(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("first", args, {});
  if (v.is_list()) {
    if (v.as_list().empty()) return Value::undefined_hint("No first item, sequence was empty.");
    return v.as_list().front();
  }
  const std::vector<Value> items = items_of(interp, v);
  if (items.empty()) return Value::undefined_hint("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("last", args, {});
  if (v.is_object() && !v.as_object()->length()) {
    throw_runtime("'" + type_name(v) + "' object is not reversible");
  }
  if (v.is_list()) {
    if (v.as_list().empty()) return Value::undefined_hint("No last item, sequence was empty.");
    return v.as_list().back();
  }
  const std::vector<Value> items = items_of(interp, v);
  if (items.empty()) return Value::undefined_hint("No last item, sequence was empty.");
  return items.back();
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
  ArgBinder b("float", args, {"default"});
  const Value fallback = b.get_or(0, Value::number(0.0));
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_number()) return Value::number(v.as_double());
  if (v.is_string()) {
    std::string s(py::strip(v.as_string(), nullptr, true, true));
    std::string digits;
    for (size_t i = 0; i < s.size(); ++i) {
      // Python allows single underscores between digits.
      if (s[i] == '_' && i > 0 && i + 1 < s.size() &&
          std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
          std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
        continue;
      }
      digits += s[i];
    }
    const std::string low = py::lower(digits);
    const std::string body =
        (!low.empty() && (low[0] == '+' || low[0] == '-')) ? low.substr(1) : low;
    if (body == "inf" || body == "infinity" || body == "nan") {
      const double x = body == "nan" ? NAN : HUGE_VAL;
      return Value::number(low[0] == '-' ? -x : x);
    }
    if (!digits.empty() && digits.find_first_not_of("0123456789.eE+-") == std::string::npos) {
      char* end = nullptr;
      const double d = std::strtod(digits.c_str(), &end);
      if (end == digits.c_str() + digits.size()) return Value::number(d);
    }
    return fallback;
  }
  return fallback;
}

// Python's int(str, base): optional sign, optional prefix for base 0/2/8/16,
// underscores between digits, surrounding whitespace.
std::optional<int64_t> parse_python_int(const std::string& text, int64_t base) {
  std::string s(py::strip(text, nullptr, true, true));
  bool neg = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  auto prefix_base = [&](char p) -> int64_t {
    p = static_cast<char>(p | 0x20);
    return p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
  };
  if (i + 1 < s.size() && s[i] == '0' && prefix_base(s[i + 1]) != 0 &&
      (base == 0 || base == prefix_base(s[i + 1]))) {
    base = prefix_base(s[i + 1]);
    i += 2;
    if (i < s.size() && s[i] == '_') ++i;
  }
  if (base == 0) base = 10;
  if (base < 2 || base > 36) return std::nullopt;
  if (i >= s.size()) return std::nullopt;
  int64_t v = 0;
  bool prev_digit = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      if (!prev_digit || i + 1 >= s.size()) return std::nullopt;
      prev_digit = false;
      continue;
    }
    int d = -1;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'z')
      d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'Z')
      d = c - 'A' + 10;
    if (d < 0 || d >= base) return std::nullopt;
    if (__builtin_mul_overflow(v, base, &v) || __builtin_add_overflow(v, d, &v)) {
      throw_limit("integer beyond 64 bits");
    }
    prev_digit = true;
  }
  if (!prev_digit) return std::nullopt;
  return neg ? -v : v;
}

Value f_int(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("int", args, {"default", "base"});
  const Value fallback = b.get_or(0, Value::integer(0));
  const int64_t base = b.get(1) ? to_int_arg(*b.get(1), "base") : 10;
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) return Value::integer(v.as_int());
  auto from_double = [&](double d) -> Value {
    if (std::isnan(d)) return fallback;  // ValueError
    if (std::isinf(d)) throw_limit("cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2e18) throw_limit("integer beyond 64 bits");
    return Value::integer(static_cast<int64_t>(std::trunc(d)));
  };
  if (v.is_float()) return from_double(v.as_float());
  if (v.is_string()) {
    if (auto i = parse_python_int(v.as_string(), base)) return Value::integer(*i);
    // "42.23"|int gives 42: int(float(value)).
    CallArgs no_default;
    no_default.positional.push_back(Value::none());
    const Value parsed = f_float(interp, v, no_default);
    if (parsed.is_float()) return from_double(parsed.as_float());
    return fallback;
  }
  return fallback;
}

Value f_format(Interpreter& interp, const Value& v, CallArgs& args) {
  if (!args.positional.empty() && !args.keywords.empty()) {
    throw_runtime("can't handle positional and keyword arguments at the same time");
  }
  Value values;
  if (!args.keywords.empty()) {
    DictData d;
    for (auto& [k, val] : args.keywords) d.set(Value::string(k), val);
    values = Value::dict(std::move(d));
  } else {
    values = Value::tuple(args.positional);
  }
  const Value s = soft_str(interp, v);
  return interp.make_string(percent_format(interp, s.as_string(), values), s.is_markup());
}

Value f_indent(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("indent", args, {"width", "first", "blank"});
  std::string indention;
  if (b.get(0) && b.get(0)->is_string()) {
    indention = b.get(0)->as_string();
  } else {
    const int64_t width = b.get(0) ? to_int_arg(*b.get(0), "width") : 4;
    if (width > static_cast<int64_t>(interp.options().limits.max_output_bytes)) {
      throw_limit("template built an oversized string");
    }
    indention.assign(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  }
  const bool first = b.get(1) && truthy(*b.get(1));
  const bool blank = b.get(2) && truthy(*b.get(2));
  if (!v.is_string()) {
    if (v.is_undefined()) fail_undefined(v);
    throw_runtime("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
  }
  const std::string s = v.as_string() + "\n";
  const std::vector<std::string> lines = py::splitlines(s, false);
  interp.charge_items(lines.size());
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) rv += "\n" + indention;
      rv += lines[i];
      if (rv.size() > interp.options().limits.max_output_bytes) break;
    }
  } else {
    rv = lines.empty() ? std::string() : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += indention;
      rv += lines[i];
      if (rv.size() > interp.options().limits.max_output_bytes) break;
    }
  }
  if (first) rv = indention + rv;
  return interp.make_string(std::move(rv), v.is_markup());
}

Value f_items(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("items", args, {});
  if (v.is_undefined()) return iterator("generator", {});
  if (!v.is_dict()) throw_runtime("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  interp.charge_items(v.as_dict().size());
  for (const auto& [k, val] : v.as_dict().entries()) out.push_back(Value::tuple({k, val}));
  return iterator("generator", std::move(out));
}

Value f_list(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("list", args, {});
  return Value::list(items_of(interp, v));
}

Value f_lower(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("lower", args, {});
  const Value s = soft_str(interp, v);
  return interp.make_string(py::lower(s.as_string()), s.is_markup());
}

Value f_upper(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("upper", args, {});
  const Value s = soft_str(interp, v);
  return interp.make_string(py::upper(s.as_string()), s.is_markup());
}

Value f_title(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("title", args, {});
  const Value s = soft_str(interp, v);
  // Jinja splits on runs of - whitespace ( { [ < and capitalizes each piece.
  const std::vector<char32_t> cps = py::decode(s.as_string());
  auto is_sep = [](char32_t c) {
    return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py::is_space(c);
  };
  std::string out;
  size_t i = 0;
  while (i < cps.size()) {
    size_t j = i;
    const bool sep = is_sep(cps[i]);
    while (j < cps.size() && is_sep(cps[j]) == sep) ++j;
    std::string piece = py::encode(std::vector<char32_t>(cps.begin() + i, cps.begin() + j));
    std::string head;
    py::append_code_point(cps[i], &head);
    out += py::upper(head);
    size_t skip = 0;
    py::next_code_point(piece, &skip);
    out += py::lower(piece.substr(skip));
    i = j;
  }
  return interp.make_string(std::move(out));
}

Value f_trim(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("trim", args, {"chars"});
  const Value s = soft_str(interp, v);
  std::string chars;
  const bool has = b.get(0) && !b.get(0)->is_none();
  if (has) chars = to_str(*b.get(0), interp.max_string_bytes());
  return interp.make_string(
      std::string(py::strip(s.as_string(), has ? &chars : nullptr, true, true)), s.is_markup());
}

Value f_replace(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("replace", args, {"old", "new", "count"});
  if (!b.get(0) || !b.get(1)) throw_runtime("replace() missing required arguments");
  const int64_t count = b.get(2) && !b.get(2)->is_none() ? to_int_arg(*b.get(2), "count") : -1;
  // Without autoescape Jinja returns str(s).replace(str(old), str(new), count).
  CallArgs method_args;
  method_args.positional = {Value::string(to_str(*b.get(0), interp.max_string_bytes())),
                            Value::string(to_str(*b.get(1), interp.max_string_bytes())),
                            Value::integer(count)};
  return call_method(interp, Value::string(to_str(v, interp.max_string_bytes())), "replace",
                     method_args);
}

Value f_reverse(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("reverse", args, {});
  if (v.is_string()) {
    return interp.make_string(py::slice(v.as_string(), false, 0, false, 0, -1), v.is_markup());
  }
  if (v.is_undefined()) fail_undefined(v);
  std::vector<Value> items = items_of(interp, v);
  std::reverse(items.begin(), items.end());
  if (v.is_list() || v.is_dict()) return iterator("reversed", std::move(items));
  return Value::list(std::move(items));
}

double python_round(double x, int64_t ndigits) {
  if (!std::isfinite(x) || x == 0.0) return x;
  if (ndigits > 330) return x;
  if (ndigits >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(ndigits), x);
    return std::strtod(buf, nullptr);
  }
  if (ndigits < -330) return std::copysign(0.0, x);
  const double p = std::pow(10.0, static_cast<double>(-ndigits));
  const double y = x / p;
  double z = std::nearbyint(y);  // half-even in the default rounding mode
  return z * p;
}

Value f_round(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("round", args, {"precision", "method"});
  const int64_t precision = b.get(0) ? to_int_arg(*b.get(0), "precision") : 0;
  const std::string method = b.get(1) ? to_str(*b.get(1), interp.max_string_bytes()) : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    throw_runtime("method must be common, ceil or floor");
  }
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_number()) throw_runtime("type " + type_name(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (v.is_integral()) {
      if (precision >= 0) return Value::integer(v.as_int());
      int64_t p = 1;
      for (int64_t i = 0; i < -precision && p < INT64_MAX / 10; ++i) p *= 10;
      const int64_t x = v.as_int();
      int64_t q = x / p;
      int64_t r = x % p;
      if (r < 0) {
        r += p;
        --q;
      }
      if (2 * r > p || (2 * r == p && (q % 2 != 0))) ++q;
      return Value::integer(q * p);
    }
    return Value::number(python_round(v.as_float(), precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = v.as_double() * scale;
  const double r = method == "ceil" ? std::ceil(scaled) : std::floor(scaled);
  return Value::number(r / scale);
}

Value f_safe(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("safe", args, {});
  return interp.make_string(to_str(v, interp.max_string_bytes()), true);
}

Value f_escape(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("escape", args, {});
  if (v.is_markup()) return v;
  return interp.make_string(py::escape_html(to_str(v, interp.max_string_bytes())), true);
}

Value f_forceescape(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("forceescape", args, {});
  return interp.make_string(py::escape_html(to_str(v, interp.max_string_bytes())), true);
}

Value f_string(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("string", args, {});
  return soft_str(interp, v);
}

Value f_striptags(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("striptags", args, {});
  CallArgs none;
  return call_method(interp, Value::markup(to_str(v, interp.max_string_bytes())), "striptags",
                     none);
}

Value f_sum(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("sum", args, {"attribute", "start"});
  const AttrGetter getter(b.get(0), false, nullptr);
  Value total = b.get_or(1, Value::integer(0));
  if (total.is_string()) throw_runtime("sum() can't sum strings [use ''.join(seq) instead]");
  for (const Value& item : items_of(interp, v)) {
    total = interp.binary_op(BinaryOp::kAdd, total, b.get(0) ? getter(interp, item) : item);
  }
  return total;
}

Value f_tojson(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions options;
  options.ensure_ascii = b.get(0) && truthy(*b.get(0));
  if (const Value* indent = b.get(1); indent && !indent->is_none()) {
    options.has_indent = true;
    if (indent->is_string()) {
      options.indent = indent->as_string();
    } else if (indent->is_integral()) {
      const int64_t n = indent->as_int();
      if (n > 4096) throw_limit("tojson indent too large");
      options.indent.assign(static_cast<size_t>(std::max<int64_t>(n, 0)), ' ');
    } else {
      throw_runtime("can't multiply sequence by non-int of type '" + type_name(*indent) + "'");
    }
  }
  if (const Value* sep = b.get(2); sep && !sep->is_none()) {
    const std::vector<Value> parts = iterate(*sep);
    if (parts.size() != 2) throw_runtime("separators must be a pair of strings");
    if (!parts[0].is_string() || !parts[1].is_string()) {
      throw_runtime("separators must be a pair of strings");
    }
    options.has_separators = true;
    options.item_separator = parts[0].as_string();
    options.key_separator = parts[1].as_string();
  }
  options.sort_keys = b.get(3) && truthy(*b.get(3));
  std::string out;
  append_json(v, options, &out, interp.max_string_bytes());
  return interp.make_string(std::move(out));
}

Value f_truncate(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("truncate", args, {"length", "killwords", "end", "leeway"});
  const int64_t length = b.get(0) ? to_int_arg(*b.get(0), "length") : 255;
  const bool killwords = b.get(1) && truthy(*b.get(1));
  const std::string end = b.get(2) ? to_str(*b.get(2), interp.max_string_bytes()) : "...";
  const int64_t leeway = b.get(3) && !b.get(3)->is_none() ? to_int_arg(*b.get(3), "leeway") : 5;
  const auto end_len = static_cast<int64_t>(py::length(end));
  if (length < end_len) {
    throw_runtime("expected length >= " + std::to_string(end_len) + ", got " +
                  std::to_string(length));
  }
  if (leeway < 0) throw_runtime("expected leeway >= 0, got " + std::to_string(leeway));
  if (!v.is_string()) throw_runtime("object of type '" + type_name(v) + "' has no len()");
  const std::string& s = v.as_string();
  if (static_cast<int64_t>(py::length(s)) <= length + leeway) return v;
  std::string head = py::slice(s, false, 0, true, length - end_len, 1);
  if (!killwords) {
    const std::string space = " ";
    head = py::rsplit(head, &space, 1)[0];
  }
  return interp.make_string(head + end);
}

Value f_wordcount(Interpreter& interp, const Value& v, CallArgs& args) {
  ArgBinder b("wordcount", args, {});
  const Value s = soft_str(interp, v);
  int64_t n = 0;
  bool in_word = false;
  const std::string& text = s.as_string();
  for (size_t pos = 0; pos < text.size();) {
    const char32_t c = py::next_code_point(text, &pos);
    const bool w = c == '_' || py::is_alnum(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

// map / select / reject / selectattr / rejectattr.

Value f_map(Interpreter& interp, const Value& v, CallArgs& args) {
  // Jinja's generator starts with `if value:`: a falsy input maps to nothing.
  if (!truthy(v)) return iterator("generator", {});
  std::vector<Value> out;
  const std::vector<Value> items = items_of(interp, v);
  if (args.positional.empty()) {
    const Value* attribute = nullptr;
    const Value* fallback = nullptr;
    for (const auto& [k, val] : args.keywords) {
      if (k == "attribute")
        attribute = &val;
      else if (k == "default")
        fallback = &val;
      else
        throw_runtime("Unexpected keyword argument '" + k + "'");
    }
    if (!attribute) throw_runtime("map requires a filter argument");
    const AttrGetter getter(attribute, false, fallback);
    for (const Value& item : items) out.push_back(getter(interp, item));
    return iterator("generator", std::move(out));
  }
  const std::string name = to_str(args.positional[0], interp.max_string_bytes());
  for (const Value& item : items) {
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keywords = args.keywords;
    out.push_back(interp.run_filter(name, item, rest));
  }
  return iterator("generator", std::move(out));
}

Value select_or_reject(Interpreter& interp, const Value& v, CallArgs& args, bool select,
                       bool by_attribute) {
  // Jinja's generator starts with `if value:`: a falsy input selects nothing.
  if (!truthy(v)) return iterator("generator", {});
  size_t off = 0;
  std::optional<AttrGetter> getter;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) throw_runtime("Missing parameter for attribute name");
    attribute = args.positional[0];
    getter.emplace(&attribute, false, nullptr);
    off = 1;
  }
  std::optional<std::string> test;
  if (args.positional.size() > off) test = to_str(args.positional[off], interp.max_string_bytes());
  std::vector<Value> out;
  for (Value& item : items_of(interp, v)) {
    const Value subject = getter ? (*getter)(interp, item) : item;
    bool keep;
    if (test) {
      CallArgs rest;
      rest.positional.assign(args.positional.begin() + static_cast<long>(off) + 1,
                             args.positional.end());
      rest.keywords = args.keywords;
      keep = interp.run_test(*test, subject, rest);
    } else {
      keep = truthy(subject);
    }
    if (keep == select) out.push_back(std::move(item));
  }
  return iterator("generator", std::move(out));
}

Value f_select(Interpreter& i, const Value& v, CallArgs& a) {
  return select_or_reject(i, v, a, true, false);
}
Value f_reject(Interpreter& i, const Value& v, CallArgs& a) {
  return select_or_reject(i, v, a, false, false);
}
Value f_selectattr(Interpreter& i, const Value& v, CallArgs& a) {
  return select_or_reject(i, v, a, true, true);
}
Value f_rejectattr(Interpreter& i, const Value& v, CallArgs& a) {
  return select_or_reject(i, v, a, false, true);
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const std::unordered_map<std::string_view, FilterFn> kFilters = {
      {"abs", f_abs},           {"attr", f_attr},
      {"batch", f_batch},       {"capitalize", f_capitalize},
      {"center", f_center},     {"count", f_length},
      {"d", f_default},         {"default", f_default},
      {"dictsort", f_dictsort}, {"e", f_escape},
      {"escape", f_escape},     {"first", f_first},
      {"float", f_float},       {"forceescape", f_forceescape},
      {"format", f_format},     {"indent", f_indent},
      {"int", f_int},           {"items", f_items},
      {"join", f_join},         {"last", f_last},
      {"length", f_length},     {"list", f_list},
      {"lower", f_lower},       {"map", f_map},
      {"max", f_max},           {"min", f_min},
      {"reject", f_reject},     {"rejectattr", f_rejectattr},
      {"replace", f_replace},   {"reverse", f_reverse},
      {"round", f_round},       {"safe", f_safe},
      {"select", f_select},     {"selectattr", f_selectattr},
      {"slice", f_slice},       {"sort", f_sort},
      {"string", f_string},     {"striptags", f_striptags},
      {"sum", f_sum},           {"title", f_title},
      {"tojson", f_tojson},     {"trim", f_trim},
      {"truncate", f_truncate}, {"unique", f_unique},
      {"upper", f_upper},       {"wordcount", f_wordcount},
  };
  return kFilters;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  const auto& all = filters();
  auto it = all.find(name);
  return it == all.end() ? nullptr : it->second;
}

}  // namespace strata::jinja
