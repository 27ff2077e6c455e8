// Text forms of a Value exactly as Python writes them: str() (what `{{ x }}`
// prints), repr() (elements inside a printed list or dict), float repr, and
// json.dumps() as transformers' `tojson` filter calls it. Stateless and
// thread-safe.
#pragma once

#include <string>

#include "jinja/value.h"

namespace strata::jinja {

// str(v): Undefined prints "", None "None", True "True", floats as repr,
// containers as repr.
void append_str(const Value& v, std::string* out);
std::string to_str(const Value& v);
// repr(v).
void append_repr(const Value& v, std::string* out);
std::string to_repr(const Value& v);
// float.__repr__: shortest round-trip digits, "1.0", "1e+16", "inf", "nan".
std::string float_repr(double d);

// json.dumps(value, ensure_ascii, indent, separators, sort_keys).
struct JsonOptions {
  bool ensure_ascii = false;
  bool has_indent = false;  // indent=None when false
  std::string indent;       // the indent unit (an int n means n spaces)
  // separators=None: (", ", ": ") without indent, (",", ": ") with it.
  bool has_separators = false;
  std::string item_separator;
  std::string key_separator;
  bool sort_keys = false;
};
// Throws a runtime error for what json.dumps refuses (Undefined, objects,
// non-string keys that are not scalars).
void append_json(const Value& v, const JsonOptions& options, std::string* out);

}  // namespace strata::jinja
