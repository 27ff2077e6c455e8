// Python's binary operators on Values, as Jinja evaluates them: + - * / //
// % ** with int/float promotion (bool is an int), str and list
// concatenation and repetition, Markup's escaping +, and `str % args`.
// Integers are 64-bit: a result beyond that is a kLimit error where Python
// would grow. Errors are Python's TypeError / ZeroDivisionError messages.
#pragma once

#include "jinja/ast.h"
#include "jinja/value.h"

namespace strata::jinja {

class Interpreter;

Value binary_operator(Interpreter& interp, BinaryOp op, const Value& a, const Value& b);

[[noreturn]] void fail_integer_overflow();

}  // namespace strata::jinja
