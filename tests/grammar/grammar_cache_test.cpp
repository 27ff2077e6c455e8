#include "grammar/grammar_cache.h"

#include <gtest/gtest.h>

#include <thread>

#include "grammar_test_util.h"

namespace strata {
namespace {

TEST(GrammarCache, HitsMissesEvictionAndErrors) {
  GrammarCache cache(grammar_test::small_vocab(), GrammarCache::Options{2});
  auto a = cache.get({GrammarKind::kRegex, "a+"});
  ASSERT_TRUE(a.is_ok());
  auto a2 = cache.get({GrammarKind::kRegex, "a+"});
  ASSERT_TRUE(a2.is_ok());
  EXPECT_EQ(a->get(), a2->get());
  // Same text, another kind: another grammar.
  auto g = cache.get({GrammarKind::kGbnf, "root ::= \"a+\""});
  ASSERT_TRUE(g.is_ok());
  EXPECT_NE(g->get(), a->get());
  EXPECT_EQ(cache.num_hits(), 1u);
  EXPECT_EQ(cache.num_misses(), 2u);
  auto c = cache.get({GrammarKind::kChoice, R"(["x", "y"])"});
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(cache.size(), 2u);  // "a+" (least recent) evicted
  auto a3 = cache.get({GrammarKind::kRegex, "a+"});
  ASSERT_TRUE(a3.is_ok());
  EXPECT_NE(a3->get(), a->get());
  auto bad = cache.get({GrammarKind::kJsonSchema, R"({"uniqueItems": true})"});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), "unsupported JSON Schema keyword 'uniqueItems' at $");
  EXPECT_FALSE(cache.get({GrammarKind::kChoice, "[1]"}).is_ok());
}

TEST(GrammarCache, ConcurrentGetsAgree) {
  GrammarCache cache(grammar_test::small_vocab(), GrammarCache::Options{8});
  std::vector<std::thread> threads;
  std::vector<const TokenMaskCache*> seen(8, nullptr);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        auto r = cache.get({GrammarKind::kJsonSchema, R"({"type":"integer"})"});
        if (r.is_ok()) seen[t] = r->get();
        GrammarMatcher m(*r);
        std::vector<uint64_t> mask(cache.trie()->mask_words());
        m.fill_next_token_bitmask(mask);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 1; t < 8; ++t) EXPECT_EQ(seen[t], seen[0]);
}

}  // namespace
}  // namespace strata
