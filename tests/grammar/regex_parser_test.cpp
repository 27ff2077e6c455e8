// Regex front end against PCRE2 as the oracle: for each pattern, strings
// sampled from the grammar must fully match under PCRE2, and on random
// candidate strings (mutations of samples, random text) the matcher's
// verdict must equal PCRE2's anchored full match.
#include "grammar/regex_parser.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <gtest/gtest.h>
#include <pcre2.h>

#include "grammar_test_util.h"

namespace strata {
namespace {

class Pcre2 {
 public:
  explicit Pcre2(const std::string& pattern) {
    int err = 0;
    PCRE2_SIZE off = 0;
    const std::string anchored = "(?:" + pattern + ")";
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(anchored.data()), anchored.size(),
                          PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED, &err, &off, nullptr);
    data_ = code_ ? pcre2_match_data_create_from_pattern(code_, nullptr) : nullptr;
  }
  ~Pcre2() {
    if (data_) pcre2_match_data_free(data_);
    if (code_) pcre2_code_free(code_);
  }
  bool ok() const { return code_ != nullptr; }
  bool full_match(const std::string& s) const {
    return pcre2_match(code_, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0,
                       PCRE2_NO_UTF_CHECK * 0, data_, nullptr) >= 0;
  }

 private:
  pcre2_code* code_ = nullptr;
  pcre2_match_data* data_ = nullptr;
};

bool grammar_accepts(const std::shared_ptr<const TokenMaskCache>& cache, const std::string& s) {
  GrammarMatcher m(cache);
  return m.accept_bytes(s) && m.can_terminate();
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (int k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

TEST(RegexParser, AgreesWithPcre2) {
  const char* patterns[] = {
      "abc",
      "a|b|cd",
      "(ab)*c+d?",
      "[a-c]{2,4}x{0,2}",
      "\\d{3}-\\d{4}",
      "[A-Z][a-z]+( [A-Z][a-z]+)*",
      "[^a-z]{1,3}",
      "\\w+@\\w+\\.(com|org)",
      "\\s?[\\d.]+\\S",
      "(?:x|y){3}",
      "(?P<year>\\d{4})-(?<m>0[1-9]|1[0-2])",
      "a{2}b{1,}c{0,1}?",
      "[\\-\\]\\\\]+",
      "é+[à-ü]日本?",
      ".{2,3}",
      "\\x41é\\t",
      "^(yes|no)$",
      "(a|ab)(c|bcd)(d*)",
      "[]a]+",
      "x{,3}",
  };
  auto vocab = grammar_test::small_vocab({"x{", ",3}", "@", ".com", "-", "]]", "\\\\"});
  Xoshiro256 rng(7);
  const std::string alphabet = "abcdxyz019-.@ AZé日\t]\\{},";
  for (const char* p : patterns) {
    SCOPED_TRACE(p);
    Pcre2 oracle(p);
    ASSERT_TRUE(oracle.ok());
    auto g = grammar_from_regex(p);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    auto cache = grammar_test::make_cache(*g, vocab);
    ASSERT_TRUE(cache);
    std::vector<std::string> samples;
    for (uint64_t seed = 0; seed < 40; ++seed) {
      bool finished = false;
      const std::string s = grammar_test::random_walk(cache, seed, 30, seed < 5, &finished);
      if (!finished) continue;
      EXPECT_TRUE(oracle.full_match(s)) << "sampled \"" << s << "\" does not match";
      samples.push_back(s);
    }
    EXPECT_FALSE(samples.empty());
    // Candidates: random strings and mutated samples.
    for (int i = 0; i < 400; ++i) {
      std::string s;
      if (!samples.empty() && i % 2 == 0) {
        s = samples[rng.next_u64() % samples.size()];
        const size_t at = s.empty() ? 0 : rng.next_u64() % (s.size() + 1);
        const int op = static_cast<int>(rng.next_u64() % 3);
        const std::string c(1, alphabet[rng.next_u64() % alphabet.size()]);
        if (op == 0) {
          s.insert(at, c);
        } else if (op == 1 && at < s.size()) {
          s.erase(at, 1);
        } else if (at < s.size()) {
          s[at] = c[0];
        }
      } else {
        const int len = static_cast<int>(rng.next_u64() % 7);
        for (int k = 0; k < len; ++k) s.push_back(alphabet[rng.next_u64() % alphabet.size()]);
      }
      if (!valid_utf8(s)) continue;
      EXPECT_EQ(grammar_accepts(cache, s), oracle.full_match(s)) << "on \"" << s << "\"";
    }
  }
}

TEST(RegexParser, LengthBoundsIntersectThePattern) {
  auto nfa = parse_regex("(ab|c)+");
  ASSERT_TRUE(nfa.is_ok());
  Grammar g;
  const int32_t root = g.add_rule("root");
  auto e = emit_regex(&g, *nfa, 3, 5);
  ASSERT_TRUE(e.is_ok());
  g.set_body(root, *e);
  g.set_root(root);
  auto cache = grammar_test::make_cache(g, grammar_test::small_vocab());
  ASSERT_TRUE(cache);
  for (const char* s : {"abc", "ccc", "ababc", "cabab"})
    EXPECT_TRUE(grammar_accepts(cache, s)) << s;
  for (const char* s : {"ab", "c", "ababab", "abcabc", "abx"})
    EXPECT_FALSE(grammar_accepts(cache, s)) << s;
  // "ababab" is 6 characters: never even a prefix beyond 5.
  GrammarMatcher m(cache);
  EXPECT_FALSE(m.accept_bytes("ababab"));
}

TEST(RegexParser, UnicodeEscapes) {
  auto g = grammar_from_regex("\\u00e9\\u{1F600}\\x41");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto cache = grammar_test::make_cache(*g, grammar_test::small_vocab());
  ASSERT_TRUE(cache);
  EXPECT_TRUE(grammar_accepts(cache,
                              "é\xF0\x9F\x98\x80"
                              "A"));
  EXPECT_FALSE(grammar_accepts(cache,
                               "e\xF0\x9F\x98\x80"
                               "A"));
}

TEST(RegexParser, UnsupportedConstructsAreErrors) {
  for (const char* p : {"(a)\\1", "(?=a)", "(?<=a)b", "a\\bb", "a^b", "a$b", "(?i)a", "a++", "*a",
                        "(a", "a)", "[a", "\\p{L}", "a{5,2}", "x{99999}"}) {
    auto r = parse_regex(p);
    EXPECT_FALSE(r.is_ok()) << p;
    if (!r.is_ok()) {
      EXPECT_NE(r.status().message().find("regex: "), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace strata
