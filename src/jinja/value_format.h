// Text forms of a Value exactly as Python writes them: str() (what `{{ x }}`
// prints), repr() (elements inside a printed list or dict), float repr, and
// json.dumps() as transformers' `tojson` filter calls it. Stateless and
// thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "jinja/value.h"

namespace strata::jinja {

// Each function below stops with a kLimit error once `out` would grow past
// `max_bytes`: shared values can make a small structure print enormously
// (a list of a million references to one long string), so a render passes
// its RenderLimits::max_output_bytes.
inline constexpr size_t kNoByteLimit = SIZE_MAX;

// str(v): Undefined prints "", None "None", True "True", floats as repr,
// containers as repr.
void append_str(const Value& v, std::string* out, size_t max_bytes = kNoByteLimit);
std::string to_str(const Value& v, size_t max_bytes = kNoByteLimit);
// repr(v).
void append_repr(const Value& v, std::string* out, size_t max_bytes = kNoByteLimit);
// The same, `depth` levels down already (objects that hold values call it);
// past kMaxValueDepth levels it is a kLimit error.
void append_repr_at(const Value& v, std::string* out, size_t max_bytes, int depth);
std::string to_repr(const Value& v, size_t max_bytes = kNoByteLimit);
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
void append_json(const Value& v, const JsonOptions& options, std::string* out,
                 size_t max_bytes = kNoByteLimit);

}  // namespace strata::jinja
