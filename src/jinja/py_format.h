// Python's string formatting as templates use it: `format % args`
// (printf-style, also Jinja's `format` filter) and str.format(*args,
// **kwargs) with its format-spec mini-language (fill, align, sign, width,
// grouping, precision, type). Field lookups in str.format go through the
// sandbox's getattr/getitem, as Jinja's SandboxedFormatter does. Errors are
// Python's messages; widths are bounded (kLimit) so no format can allocate
// without limit.
#pragma once

#include <string>

#include "jinja/value.h"

namespace strata::jinja {

class Interpreter;

// `format % args`: a tuple gives the positional arguments, a dict the
// %(name)s mapping, anything else a single argument.
std::string percent_format(Interpreter& interp, const std::string& format, const Value& args);

// format.format(*args.positional, **args.keywords).
std::string str_format(Interpreter& interp, const std::string& format, CallArgs& args);

}  // namespace strata::jinja
