#include "grammar/grammar_spec.h"

#include <nlohmann/json.hpp>

#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_converter.h"
#include "grammar/regex_parser.h"

namespace strata {

const char* grammar_kind_name(GrammarKind kind) {
  switch (kind) {
    case GrammarKind::kJsonSchema:
      return "json_schema";
    case GrammarKind::kJsonObject:
      return "json_object";
    case GrammarKind::kJsonValue:
      return "json";
    case GrammarKind::kRegex:
      return "regex";
    case GrammarKind::kGbnf:
      return "grammar";
    case GrammarKind::kChoice:
      return "choice";
  }
  return "?";
}

Result<Grammar> build_grammar(const GrammarSpec& spec) {
  switch (spec.kind) {
    case GrammarKind::kJsonSchema:
      return grammar_from_json_schema(spec.text);
    case GrammarKind::kJsonObject:
      return grammar_any_json(true);
    case GrammarKind::kJsonValue:
      return grammar_any_json(false);
    case GrammarKind::kRegex:
      return grammar_from_regex(spec.text);
    case GrammarKind::kGbnf:
      return parse_gbnf(spec.text);
    case GrammarKind::kChoice: {
      const auto j = nlohmann::json::parse(spec.text, nullptr, false);
      if (j.is_discarded() || !j.is_array())
        return invalid_argument("choice: expected a JSON array of strings");
      std::vector<std::string> choices;
      for (const auto& c : j) {
        if (!c.is_string()) return invalid_argument("choice: every choice must be a string");
        choices.push_back(c.get<std::string>());
      }
      return grammar_from_choices(choices);
    }
  }
  return invalid_argument("grammar: unknown kind");
}

}  // namespace strata
