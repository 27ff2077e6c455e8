// Parser: tokens to a TemplateProgram, following Jinja2 3.1's parser
// (statements for/if/set/macro/call/filter/with/block/print, the
// loopcontrols and Hugging Face `generation` extensions; the expression
// grammar with its precedence, tests, filters, slices and call arguments).
//
// After parsing, filter and test names are resolved to builtins the way
// Jinja's compiler does: an unknown name is a syntax error, except inside
// an `if` or inline-if, where it fails only when reached. `break` and
// `continue` outside a loop are errors, as Jinja's generated Python is.
// Errors throw TemplateException (kSyntax, or kLimit for nesting beyond
// `max_nesting`). Not thread-safe; one Parser per parse.
#pragma once

#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace strata::jinja {

// Parses `tokens` (from tokenize()) into a program. `max_nesting` bounds the
// depth of nested statements and expressions, so no template can exhaust
// the stack.
TemplateProgram parse_program(std::vector<Token> tokens, int max_nesting);

}  // namespace strata::jinja
