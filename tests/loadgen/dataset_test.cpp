// Datasets: deterministic by seed, requested lengths and id ranges, shared
// prefixes interleaved across groups, JSONL parsing and its errors,
// multi-turn sessions.
#include "loadgen/dataset.h"

#include <gtest/gtest.h>

#include <set>

#include "loadgen/multi_turn.h"

namespace strata::loadgen {
namespace {

TEST(RandomDataset, ExactLengthsAndIdRangeWithoutRatio) {
  auto d = make_random_dataset({50, 32, 16, 0.0, 100, 7});
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  ASSERT_EQ(d->size(), 50u);
  for (const BenchRequest& r : *d) {
    EXPECT_EQ(r.prompt_ids.size(), 32u);
    EXPECT_EQ(r.num_prompt_tokens, 32);
    EXPECT_EQ(r.num_output_tokens, 16);
    for (int32_t id : r.prompt_ids) {
      EXPECT_GE(id, kFirstRandomTokenId);
      EXPECT_LT(id, 100);
    }
  }
  // Distinct prompts (the prefix cache must not serve them).
  EXPECT_NE((*d)[0].prompt_ids, (*d)[1].prompt_ids);
}

TEST(RandomDataset, DeterministicBySeed) {
  auto a = make_random_dataset({20, 64, 8, 0.5, 32000, 3});
  auto b = make_random_dataset({20, 64, 8, 0.5, 32000, 3});
  auto c = make_random_dataset({20, 64, 8, 0.5, 32000, 4});
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].prompt_ids, (*b)[i].prompt_ids);
    EXPECT_EQ((*a)[i].num_output_tokens, (*b)[i].num_output_tokens);
  }
  EXPECT_NE((*a)[0].prompt_ids, (*c)[0].prompt_ids);
}

TEST(RandomDataset, RangeRatioBoundsAndSpread) {
  auto d = make_random_dataset({400, 100, 10, 0.5, 1000, 1});
  ASSERT_TRUE(d.is_ok());
  std::set<size_t> in_lens;
  std::set<int32_t> out_lens;
  for (const BenchRequest& r : *d) {
    EXPECT_GE(r.prompt_ids.size(), 50u);
    EXPECT_LE(r.prompt_ids.size(), 150u);
    EXPECT_GE(r.num_output_tokens, 5);
    EXPECT_LE(r.num_output_tokens, 15);
    in_lens.insert(r.prompt_ids.size());
    out_lens.insert(r.num_output_tokens);
  }
  EXPECT_GT(in_lens.size(), 50u);   // not a constant
  EXPECT_EQ(out_lens.size(), 11u);  // every value of [5, 15] drawn in 400 tries
}

TEST(RandomDataset, RejectsBadOptions) {
  EXPECT_FALSE(make_random_dataset({1, 8, 8, 0.0, 3, 0}).is_ok());    // vocab too small
  EXPECT_FALSE(make_random_dataset({1, 8, 8, 1.0, 100, 0}).is_ok());  // ratio
  EXPECT_FALSE(make_random_dataset({1, 0, 8, 0.0, 100, 0}).is_ok());
}

TEST(SharedPrefixDataset, GroupsShareTheirPrefixAndInterleave) {
  auto d = make_shared_prefix_dataset({3, 20, 5, 4, 7, 500, 9});
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  ASSERT_EQ(d->size(), 12u);
  for (size_t i = 0; i < d->size(); ++i) {
    const BenchRequest& r = (*d)[i];
    ASSERT_EQ(r.prompt_ids.size(), 25u);
    EXPECT_EQ(r.num_output_tokens, 7);
    const BenchRequest& same_group = (*d)[i % 3];
    EXPECT_TRUE(
        std::equal(r.prompt_ids.begin(), r.prompt_ids.begin() + 20, same_group.prompt_ids.begin()));
    if (i >= 3) {
      EXPECT_NE(r.prompt_ids, same_group.prompt_ids);  // unique suffix
    }
  }
  // Consecutive prompts belong to different groups.
  EXPECT_FALSE(std::equal((*d)[0].prompt_ids.begin(), (*d)[0].prompt_ids.begin() + 20,
                          (*d)[1].prompt_ids.begin()));
  auto again = make_shared_prefix_dataset({3, 20, 5, 4, 7, 500, 9});
  ASSERT_TRUE(again.is_ok());
  for (size_t i = 0; i < d->size(); ++i) EXPECT_EQ((*d)[i].prompt_ids, (*again)[i].prompt_ids);
}

TEST(JsonlDataset, ParsesTextIdsAndLengths) {
  auto d = parse_jsonl_dataset(
      "{\"prompt\":\"hello\",\"max_tokens\":5}\n\n"
      "{\"prompt\":[1,2,3],\"output_len\":9}\r\n"
      "{\"prompt\":\"x\"}\n",
      42, 0);
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].prompt_text, "hello");
  EXPECT_EQ((*d)[0].num_prompt_tokens, -1);
  EXPECT_EQ((*d)[0].num_output_tokens, 5);
  EXPECT_EQ((*d)[1].prompt_ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ((*d)[1].num_prompt_tokens, 3);
  EXPECT_EQ((*d)[1].num_output_tokens, 9);
  EXPECT_EQ((*d)[2].num_output_tokens, 42);
  auto first2 =
      parse_jsonl_dataset("{\"prompt\":\"a\"}\n{\"prompt\":\"b\"}\n{\"prompt\":\"c\"}\n", 1, 2);
  ASSERT_TRUE(first2.is_ok());
  EXPECT_EQ(first2->size(), 2u);
}

TEST(JsonlDataset, ErrorsNameTheLine) {
  auto bad = parse_jsonl_dataset("{\"prompt\":\"a\"}\n{\"prompt\":7}\n", 1, 0);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos);
  EXPECT_FALSE(parse_jsonl_dataset("not json\n", 1, 0).is_ok());
  EXPECT_FALSE(parse_jsonl_dataset("{\"text\":\"a\"}\n", 1, 0).is_ok());
  EXPECT_FALSE(parse_jsonl_dataset("{\"prompt\":[1,-2]}\n", 1, 0).is_ok());
  EXPECT_FALSE(parse_jsonl_dataset("{\"prompt\":\"a\",\"max_tokens\":0}\n", 1, 0).is_ok());
  EXPECT_FALSE(parse_jsonl_dataset("\n\n", 1, 0).is_ok());
  EXPECT_FALSE(load_jsonl_dataset("/nonexistent/file.jsonl", 1, 0).is_ok());
}

TEST(MultiTurn, SessionsHaveTheRequestedShapeAndAreSeeded) {
  auto s = make_multi_turn_sessions({3, 4, 10, 8, 5});
  ASSERT_TRUE(s.is_ok());
  ASSERT_EQ(s->size(), 3u);
  for (const ChatSession& c : *s) {
    ASSERT_EQ(c.user_messages.size(), 4u);
    EXPECT_EQ(c.output_len, 8);
    for (const std::string& m : c.user_messages) {
      EXPECT_EQ(std::count(m.begin(), m.end(), ' '), 9);  // 10 words
    }
  }
  auto again = make_multi_turn_sessions({3, 4, 10, 8, 5});
  auto other = make_multi_turn_sessions({3, 4, 10, 8, 6});
  EXPECT_EQ((*s)[2].user_messages, (*again)[2].user_messages);
  EXPECT_NE((*s)[0].user_messages, (*other)[0].user_messages);
  EXPECT_FALSE(make_multi_turn_sessions({0, 4, 10, 8, 5}).is_ok());
}

}  // namespace
}  // namespace strata::loadgen
