// GrammarSpec: what a request constrains its output with, as the API names
// it (a JSON Schema, json_object mode, a regex, a GBNF grammar, a choice
// list), and the one dispatcher that turns it into a Grammar.
#pragma once

#include <string>

#include "grammar/grammar.h"
#include "util/status.h"

namespace strata {

enum class GrammarKind {
  kJsonSchema,  // text: the schema (JSON)
  kJsonObject,  // any JSON object; text ignored
  kJsonValue,   // any JSON value; text ignored
  kRegex,       // text: the pattern
  kGbnf,        // text: llama.cpp GBNF
  kChoice,      // text: a JSON array of strings
};

const char* grammar_kind_name(GrammarKind kind);

struct GrammarSpec {
  GrammarKind kind = GrammarKind::kJsonObject;
  std::string text;
};

// The front end for spec.kind. Errors are the front end's (name the keyword,
// offset or line:column), suitable for a 400.
Result<Grammar> build_grammar(const GrammarSpec& spec);

}  // namespace strata
