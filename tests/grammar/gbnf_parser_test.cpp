// GBNF front end on hand-checked grammars: arithmetic and JSON written in
// llama.cpp's style; outputs sampled from the JSON grammar must be JSON
// (nlohmann's parser as the independent check); errors name line:column.
#include "grammar/gbnf_parser.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "grammar_test_util.h"

namespace strata {
namespace {

const char* kArithmetic = R"gbnf(# integer arithmetic
root   ::= expr
expr   ::= term (ws ("+" | "-") ws term)*
term   ::= factor (ws ("*" | "/") ws factor)*
factor ::= number | "(" ws expr ws ")" | "-" factor
number ::= [0-9]+
ws     ::= [ \t]?
)gbnf";

const char* kJson = R"gbnf(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)gbnf";

bool accepts(const std::shared_ptr<const TokenMaskCache>& cache, const std::string& s) {
  GrammarMatcher m(cache);
  return m.accept_bytes(s) && m.can_terminate();
}

TEST(GbnfParser, Arithmetic) {
  auto g = parse_gbnf(kArithmetic);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto cache = grammar_test::make_cache(*g, grammar_test::small_vocab());
  ASSERT_TRUE(cache);
  for (const char* s : {"1", "1+2", "(1 + 2) * -3", "12/(4-2)", "--5", "((7))"})
    EXPECT_TRUE(accepts(cache, s)) << s;
  for (const char* s : {"", "1+", "(1", "1 +  2", "a", "1)", "* 2"})
    EXPECT_FALSE(accepts(cache, s)) << s;
}

TEST(GbnfParser, JsonGrammarOutputsAreJson) {
  auto g = parse_gbnf(kJson);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto cache = grammar_test::make_cache(*g, grammar_test::small_vocab());
  ASSERT_TRUE(cache);
  for (const char* s : {"{}", "{\"a\": [1, 2.5e+3, true, null, {\"b\": \"\\u00e9\"}]}",
                        "{\"k\":\n  \"v\"}", "{\"x\":-0.5}"})
    EXPECT_TRUE(accepts(cache, s)) << s;
  for (const char* s : {"[]", "{\"a\" 1}", "{'a': 1}", "{\"a\": 01}", "{\"a\": \"\x01\"}"})
    EXPECT_FALSE(accepts(cache, s)) << s;
  int32_t finished_count = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    bool finished = false;
    const std::string s = grammar_test::random_walk(cache, seed, 60, seed < 8, &finished);
    if (!finished) continue;
    ++finished_count;
    EXPECT_TRUE(nlohmann::json::accept(s)) << s;
  }
  EXPECT_GT(finished_count, 5);
}

TEST(GbnfParser, ErrorsNameLineAndColumn) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"root ::= \"a\" (\"b\"\n", "gbnf: 2:1: expected ')'"},
      {"root ::= foo\n", "gbnf: 1:10: undefined rule 'foo'"},
      {"root ::= \"a\"\nroot ::= \"b\"", "gbnf: 2:1: rule 'root' defined twice"},
      {"root ::= [a-\n", "gbnf: 1:10: unterminated character class"},
      {"root ::= \"abc\n", "gbnf: 1:10: unterminated string literal"},
      {"root := \"a\"", "gbnf: 1:6: expected '::='"},
      {"a ::= \"x\"", "gbnf: no 'root' rule"},
      {"root ::= \"a\"{3,1}", "gbnf: 1:18: repetition {m,n} with n < m"},
      {"root ::= \"\\q\"", "gbnf: 1:11: unknown escape '\\q'"},
      {"root ::= @", "gbnf: 1:10: unexpected character '@'"},
  };
  for (const auto& c : cases) {
    auto g = parse_gbnf(c.text);
    ASSERT_FALSE(g.is_ok()) << c.text;
    EXPECT_EQ(g.status().message(), c.expected) << c.text;
  }
}

}  // namespace
}  // namespace strata
