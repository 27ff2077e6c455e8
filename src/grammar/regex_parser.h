// Regex front end: the pattern subset that vLLM / outlines users send
// (guided_regex, JSON Schema "pattern") parsed to an epsilon-free NFA over
// code point classes, then emitted into a Grammar.
//
// Supported: literals (UTF-8), `.` (any character but \n), classes [...]
// with ranges, negation and escapes, \d \w \s \D \W \S, \t \n \r \f \v \0
// \xHH \uHHHH \u{H..}, escaped metacharacters, groups (...) (?:...)
// (?P<n>...) (?<n>...), alternation, quantifiers * + ? {m} {m,} {m,n} (lazy
// forms accepted: laziness does not change the language). The whole pattern
// must match (anchors are implicit; a leading ^ and trailing $ are allowed).
// Anything else (backreferences, lookaround, \b, inner anchors, possessive
// quantifiers, flags) is an error naming it and its offset.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "util/status.h"

namespace strata {

struct RegexNfa {
  struct Edge {
    int32_t from, to;
    std::vector<CodepointRange> ranges;  // normalized
  };
  int32_t num_states = 0;
  int32_t start = 0;
  std::vector<int32_t> finals;
  std::vector<Edge> edges;
};

struct RegexLimits {
  int32_t max_states = 200000;  // NFA states after expanding {m,n}
  int32_t max_repeat = 10000;   // largest m or n in {m,n}
  int32_t max_nesting = 200;    // group depth
};

Result<RegexNfa> parse_regex(std::string_view pattern, const RegexLimits& limits = {});

// Emits `nfa` restricted to strings of min_chars..max_chars characters
// (max_chars < 0: unbounded) as one expression of `g`; each character class
// becomes unit(ranges) (default: g->char_class). Fails when the length
// product would exceed limits.max_states.
Result<int32_t> emit_regex(
    Grammar* g, const RegexNfa& nfa, int32_t min_chars = 0, int32_t max_chars = -1,
    const std::function<int32_t(Grammar*, const std::vector<CodepointRange>&)>& unit = nullptr,
    const RegexLimits& limits = {});

// A grammar whose language is exactly the pattern's.
Result<Grammar> grammar_from_regex(std::string_view pattern);

}  // namespace strata
