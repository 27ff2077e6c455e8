// Passes over a parsed template that Jinja's compiler makes: filter and test
// names resolved to builtins (an unknown one is a syntax error, except in an
// `if` or inline-if, where Jinja defers it to when it is reached), and which
// of caller/kwargs/varargs a macro body reads (find_undeclared), which
// decides the arguments the macro accepts.
#pragma once

#include "jinja/ast.h"

namespace strata::jinja {

// Fills every FilterExpr::fn / TestExpr::fn; throws TemplateException
// (kSyntax) for an unknown name outside a soft frame.
void resolve_builtins(Body* body);

struct MacroNameUse {
  bool caller = false;
  bool kwargs = false;
  bool varargs = false;
};
// Which special names a macro body loads (nested macros included).
MacroNameUse scan_macro_names(const Body& body);

}  // namespace strata::jinja
