// GrammarMatcher on small grammars: acceptance, termination, rollback,
// jump-forward, and the fast mask equal to brute force on random walks.
#include "grammar/grammar_matcher.h"

#include <gtest/gtest.h>

#include "grammar/gbnf_parser.h"
#include "grammar/regex_parser.h"
#include "grammar_test_util.h"

namespace strata {
namespace {

using grammar_test::make_cache;
using grammar_test::small_vocab;

std::shared_ptr<const TokenMaskCache> gbnf_cache(const std::string& text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  if (!g.is_ok()) return nullptr;
  return make_cache(*g, small_vocab());
}

bool accepts(const std::shared_ptr<const TokenMaskCache>& cache, const std::string& text,
             bool complete) {
  GrammarMatcher m(cache);
  if (!m.accept_bytes(text)) return false;
  return !complete || m.can_terminate();
}

TEST(GrammarMatcher, AcceptsExactlyTheLanguage) {
  auto c = gbnf_cache(R"(root ::= "a" ("b" | "cd")* "e")");
  ASSERT_TRUE(c);
  EXPECT_TRUE(accepts(c, "ae", true));
  EXPECT_TRUE(accepts(c, "abcdbe", true));
  EXPECT_TRUE(accepts(c, "abc", false));
  EXPECT_FALSE(accepts(c, "abc", true));
  EXPECT_FALSE(accepts(c, "ace", false));
  EXPECT_FALSE(accepts(c, "b", false));
}

TEST(GrammarMatcher, RecursionAndNullableRules) {
  auto c = gbnf_cache("root ::= item\nitem ::= \"(\" item* \")\" | empty \"x\"\nempty ::= \"\"\n");
  ASSERT_TRUE(c);
  EXPECT_TRUE(accepts(c, "x", true));
  EXPECT_TRUE(accepts(c, "((x)(()))", true));
  EXPECT_FALSE(accepts(c, "(()", true));
  EXPECT_FALSE(accepts(c, "())", false));
}

TEST(GrammarMatcher, LeftRecursionIsRejected) {
  auto g = parse_gbnf("root ::= root \"a\" | \"b\"");
  ASSERT_TRUE(g.is_ok());
  auto c = CompiledGrammar::compile(*g);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("left-recursive"), std::string::npos);
}

TEST(GrammarMatcher, EosOnlyWhenTheGrammarCanEnd) {
  auto c = gbnf_cache(R"(root ::= "ab" "c"?)");
  ASSERT_TRUE(c);
  GrammarMatcher m(c);
  const int32_t eos = c->trie().eog_ids()[0];
  EXPECT_FALSE(m.accept_token(eos));
  ASSERT_TRUE(m.accept_bytes("ab"));
  EXPECT_TRUE(m.can_terminate());
  EXPECT_FALSE(m.is_terminated());
  std::vector<uint64_t> mask(c->trie().mask_words());
  m.fill_next_token_bitmask(mask);
  EXPECT_TRUE((mask[eos >> 6] >> (eos & 63)) & 1);
  ASSERT_TRUE(m.accept_bytes("c"));
  EXPECT_TRUE(m.is_terminated());  // nothing can follow
  EXPECT_TRUE(m.accept_token(eos));
}

TEST(GrammarMatcher, RollbackRestoresState) {
  auto c = gbnf_cache(R"(root ::= "abc" | "abd")");
  ASSERT_TRUE(c);
  GrammarMatcher m(c);
  ASSERT_TRUE(m.accept_bytes("a"));
  ASSERT_TRUE(m.accept_bytes("b"));
  ASSERT_TRUE(m.accept_bytes("c"));
  EXPECT_TRUE(m.can_terminate());
  EXPECT_TRUE(m.rollback(1));
  EXPECT_FALSE(m.can_terminate());
  EXPECT_TRUE(m.accept_bytes("d"));
  EXPECT_TRUE(m.can_terminate());
  EXPECT_TRUE(m.rollback(3));
  EXPECT_EQ(m.num_history(), 0);
  EXPECT_FALSE(m.rollback(1));
}

TEST(GrammarMatcher, JumpForwardFindsForcedBytes) {
  auto c = gbnf_cache(R"(root ::= "{\"name\": " ("\"x\"" | "\"y\"") ", \"age\": " [0-9]+ "}")");
  ASSERT_TRUE(c);
  GrammarMatcher m(c);
  EXPECT_EQ(m.find_jump_forward_bytes(), "{\"name\": \"");
  ASSERT_TRUE(m.accept_bytes("{\"name\": \"x"));
  EXPECT_EQ(m.find_jump_forward_bytes(), "\", \"age\": ");
  ASSERT_TRUE(m.accept_bytes("\", \"age\": 1"));
  EXPECT_EQ(m.find_jump_forward_bytes(), "");  // a digit or '}'
  EXPECT_EQ(m.find_jump_forward_bytes(3), "");
  GrammarMatcher m2(c);
  EXPECT_EQ(m2.find_jump_forward_bytes(3), "{\"n");
}

TEST(TokenTrie, GreedyTokenizeTakesLongestMatches) {
  auto trie = small_vocab();
  const auto ids = trie->greedy_tokenize("{\"abc\":");
  std::string spelled;
  for (int32_t id : ids) spelled += trie->token_bytes(id);
  EXPECT_EQ(spelled, "{\"abc\":");
  ASSERT_EQ(ids.size(), 3u);  // {" abc ":
  EXPECT_EQ(trie->token_bytes(ids[1]), "abc");
  EXPECT_TRUE(trie->greedy_tokenize("\x01").empty());  // no token for the byte
}

TEST(GrammarMatcher, UnicodeClassesAreUtf8) {
  auto c = gbnf_cache(R"(root ::= [^a-z]{2} [é-ü] .)");
  ASSERT_TRUE(c);
  EXPECT_TRUE(accepts(c, "日本é\xF0\x9F\x98\x80", true));
  EXPECT_TRUE(accepts(c, "AZüx", true));
  EXPECT_FALSE(accepts(c, "aZüx", false));
  EXPECT_FALSE(accepts(c, "AZax", false));
  EXPECT_FALSE(accepts(c, "\xC3", true));
  EXPECT_FALSE(accepts(c, "\xED\xA0\x80", false));  // a surrogate is not a character
}

// The fast mask (precomputed context-independent masks + uncertain
// subtrees walked on the real stack) equals trying every token.
TEST(GrammarMatcher, MaskEqualsBruteForceOnRandomWalks) {
  const char* grammars[] = {
      R"(root ::= "a" ("b" | "cd")* "e")",
      "root ::= value\nvalue ::= obj | arr | str | num | \"true\" | \"false\" | \"null\"\n"
      "obj ::= \"{\" ws (str ws \":\" ws value (ws \",\" ws str ws \":\" ws value)*)? ws \"}\"\n"
      "arr ::= \"[\" ws (value (ws \",\" ws value)*)? ws \"]\"\n"
      "str ::= \"\\\"\" ([^\"\\\\] | \"\\\\\" [\"\\\\nt])* \"\\\"\"\n"
      "num ::= \"-\"? [0-9]+ (\".\" [0-9]+)?\nws ::= [ \\n]{0,2}\n",
      "root ::= (expr \"\\n\"){1,3}\nexpr ::= term ((\"+\" | \"-\") term)*\n"
      "term ::= factor ((\"*\" | \"/\") factor)*\nfactor ::= [0-9]+ | \"(\" expr \")\"\n",
      R"(root ::= [a-c]{2,4} ("x" | "xy" | "xyz"){0,3} "!"?)",
  };
  int32_t checked = 0;
  for (const char* text : grammars) {
    auto c = gbnf_cache(text);
    ASSERT_TRUE(c) << text;
    for (uint64_t seed = 0; seed < 30; ++seed) {
      bool finished = false;
      grammar_test::random_walk(c, seed, 40, true, &finished, &checked);
    }
  }
  EXPECT_GT(checked, 500);
}

TEST(GrammarMatcher, RegexGrammarMask) {
  auto g = grammar_from_regex(R"((\d{3}-)?[a-f]+(x|yz)*\.?)");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto c = make_cache(*g, small_vocab());
  ASSERT_TRUE(c);
  for (uint64_t seed = 0; seed < 30; ++seed) {
    bool finished = false;
    grammar_test::random_walk(c, seed, 30, true, &finished);
  }
}

}  // namespace
}  // namespace strata
