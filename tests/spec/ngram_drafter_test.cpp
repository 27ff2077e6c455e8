#include "spec/ngram_drafter.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

std::vector<int32_t> propose(NgramDrafter& d, const std::vector<int32_t>& tokens, int32_t k) {
  std::vector<int32_t> out;
  d.propose(1, tokens, 0, k, &out);
  return out;
}

TEST(NgramDrafter, ProposesWhatFollowedTheLatestLongestMatch) {
  NgramDrafter d(1, 3);
  // ... 7 8 9 [1 2] ... 4 5 6 [1 2]: the 2-gram "1 2" matched twice; the
  // 3-gram "x 1 2" nowhere; the latest 2-gram match is followed by 4 5 6.
  const std::vector<int32_t> tokens = {7, 8, 9, 1, 2, 3, 3, 1, 2, 4, 5, 6, 0, 1, 2};
  EXPECT_EQ(propose(d, tokens, 3), (std::vector<int32_t>{4, 5, 6}));
  EXPECT_EQ(propose(d, tokens, 1), (std::vector<int32_t>{4}));
}

TEST(NgramDrafter, LongerMatchBeatsLaterShorterOne) {
  NgramDrafter d(1, 3);
  // "5 1 2" occurs early (followed by 8); "1 2" later (followed by 9).
  const std::vector<int32_t> tokens = {5, 1, 2, 8, 0, 1, 2, 9, 0, 5, 1, 2};
  EXPECT_EQ(propose(d, tokens, 1), (std::vector<int32_t>{8}));
}

TEST(NgramDrafter, RespectsMinimumLength) {
  NgramDrafter d(3, 4);
  const std::vector<int32_t> tokens = {4, 1, 2, 6, 9, 1, 2};  // only a 2-gram matches
  EXPECT_TRUE(propose(d, tokens, 4).empty());
  NgramDrafter loose(2, 4);
  EXPECT_EQ(propose(loose, tokens, 2), (std::vector<int32_t>{6, 9}));
}

TEST(NgramDrafter, NoMatchNoDrafts) {
  NgramDrafter d(1, 5);
  EXPECT_TRUE(propose(d, {1, 2, 3, 4}, 4).empty());
  EXPECT_TRUE(propose(d, {1}, 4).empty());
  EXPECT_TRUE(propose(d, {}, 4).empty());
}

TEST(NgramDrafter, ReportsTheLengthOfTheMatch) {
  std::vector<int32_t> out;
  NgramDrafter d(1, 3);
  // The 2-gram "1 2" matches (no 3-gram does).
  EXPECT_EQ(d.propose(1, std::vector<int32_t>{7, 8, 9, 1, 2, 4, 0, 1, 2}, 0, 2, &out), 2);
  EXPECT_EQ(out, (std::vector<int32_t>{4, 0}));
  // "5 1 2" matches in full: max_n.
  out.clear();
  EXPECT_EQ(d.propose(1, std::vector<int32_t>{5, 1, 2, 8, 0, 5, 1, 2}, 0, 1, &out), 3);
  EXPECT_EQ(out, (std::vector<int32_t>{8}));
  out.clear();
  EXPECT_EQ(d.propose(1, std::vector<int32_t>{1, 2, 3}, 0, 1, &out), 0);
  EXPECT_TRUE(out.empty());
}

TEST(NgramDrafter, ShortCycleContinuesThroughItsOwnDrafts) {
  NgramDrafter d(1, 2);
  // A period-2 loop: the continuation runs past the end into the drafts.
  EXPECT_EQ(propose(d, {3, 1, 2, 1, 2}, 5), (std::vector<int32_t>{1, 2, 1, 2, 1}));
  EXPECT_EQ(propose(d, {7, 7}, 3), (std::vector<int32_t>{7, 7, 7}));
}

}  // namespace
}  // namespace strata
