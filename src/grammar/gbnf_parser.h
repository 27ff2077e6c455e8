// GBNF front end: llama.cpp's grammar text format, so users' existing
// grammars (guided_grammar) work.
//
//   root  ::= item ("," ws item)*     # comment
//   item  ::= [a-z]+ | "lit\n" | ( "x" | [^"\\] ){2,5} | .
//
// Rules `name ::= alternatives`; a rule's body runs until the next line that
// starts a new `name ::=` (newlines inside are whitespace). Elements: string
// literals and [classes] with escapes (\n \r \t \\ \" \] \- \xHH \uHHHH
// \UHHHHHHHH), negated classes [^...], ranges, `.` (any character), rule
// names, groups, postfix * + ? {m} {m,} {m,n}. The start rule is `root`.
// Errors name line:column ("gbnf: 3:14: expected ')'").
#pragma once

#include <string_view>

#include "grammar/grammar.h"
#include "util/status.h"

namespace strata {

struct GbnfLimits {
  size_t max_text_bytes = 1 << 20;
  int32_t max_nesting = 200;
  int32_t max_repeat = 10000;
};

Result<Grammar> parse_gbnf(std::string_view text, const GbnfLimits& limits = {});

}  // namespace strata
