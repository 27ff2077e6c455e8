#include "spec/suffix_drafter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace strata {
namespace {

using Trie = SuffixDrafter::Trie;

Trie trie_of(const std::vector<std::vector<int32_t>>& seqs, int32_t depth = 8) {
  Trie t(depth);
  for (const auto& s : seqs) {
    t.begin_sequence();
    for (int32_t x : s) t.append(x);
  }
  return t;
}

TEST(SuffixTrie, FollowsTheMostFrequentContinuation) {
  // After "1 2": 3 twice, 4 once.
  Trie t = trie_of({{1, 2, 3, 9}, {1, 2, 3, 9}, {1, 2, 4}});
  SuffixDrafterOptions o;
  o.min_token_prob = 0.0;
  o.max_spec_factor = 4.0;
  std::vector<int32_t> out;
  EXPECT_EQ(t.propose(std::vector<int32_t>{7, 1, 2}, 3, o, &out), 2);
  EXPECT_EQ(out, (std::vector<int32_t>{3, 9}));
}

// The match length against a brute-force scan: the longest suffix of the
// context (shorter than the depth) that occurs in a sequence with a token
// after it, on random streams over 3 tokens (many repeats, many lengths)
// and over 24 (nodes with more children than a list holds, found by hash).
TEST(SuffixTrie, MatchIsTheLongestContinuedSuffixByBruteForce) {
  std::mt19937 rng(11);
  for (int32_t alphabet : {3, 24})
    for (int32_t depth : {2, 3, 6, 9}) {
      std::uniform_int_distribution<int32_t> token(0, alphabet - 1);
      std::vector<std::vector<int32_t>> seqs(alphabet == 3 ? 3 : 12);
      for (auto& seq : seqs) {
        seq.resize(static_cast<size_t>(5 + rng() % 40));
        for (int32_t& x : seq) x = token(rng);
      }
      const Trie t = trie_of(seqs, depth);
      SuffixDrafterOptions o;
      for (int trial = 0; trial < 200; ++trial) {
        std::vector<int32_t> ctx(static_cast<size_t>(1 + rng() % 12));
        for (int32_t& x : ctx) x = token(rng);
        int32_t expected = 0;
        for (int32_t m = std::min<int32_t>(depth - 1, static_cast<int32_t>(ctx.size()));
             m >= 1 && expected == 0; --m) {
          for (const auto& seq : seqs) {
            for (size_t i = 0; i + static_cast<size_t>(m) < seq.size(); ++i) {
              if (std::equal(ctx.end() - m, ctx.end(),
                             seq.begin() + static_cast<std::ptrdiff_t>(i))) {
                expected = m;
              }
            }
          }
        }
        std::vector<int32_t> out;
        ASSERT_EQ(t.propose(ctx, 4, o, &out), expected) << "depth " << depth << " trial " << trial;
      }
    }
}

// A request's own trie proposes for its current sequence from the live
// suffixes' nodes; that must match the walk from the root token for token,
// at every length of the stream (shorter and longer than the depth), and
// after earlier sequences that share its paths.
TEST(SuffixTrie, ProposalForTheCurrentSequenceMatchesTheWalkFromTheRoot) {
  std::mt19937 rng(5);
  SuffixDrafterOptions o;
  o.min_token_prob = 0.2;
  o.max_spec_factor = 2.0;
  int64_t num_nonempty = 0;
  for (int32_t alphabet : {4, 16})
    for (int32_t depth : {2, 5, 24}) {
      std::uniform_int_distribution<int32_t> token(0, alphabet - 1);
      Trie t(depth);
      for (int seq = 0; seq < 3; ++seq) {
        t.begin_sequence();
        std::vector<int32_t> stream;
        for (int i = 0; i < 60; ++i) {
          stream.push_back(token(rng));
          t.append(stream.back());
          std::vector<int32_t> from_root, current;
          const int32_t m1 = t.propose(stream, 6, o, &from_root);
          const int32_t m2 = t.propose_current(6, o, &current);
          ASSERT_EQ(m2, m1) << "depth " << depth << " at " << i;
          ASSERT_EQ(current, from_root) << "depth " << depth << " at " << i;
          num_nonempty += current.empty() ? 0 : 1;
        }
      }
    }
  EXPECT_GT(num_nonempty, 100);  // the comparison covered real drafts
}

TEST(SuffixTrie, StopsBelowTheMinimumPathProbability) {
  Trie t = trie_of({{1, 2, 3}, {1, 2, 4}, {1, 2, 5}});
  SuffixDrafterOptions o;
  o.min_token_prob = 0.5;  // each continuation of "1 2" has 1/3
  o.max_spec_factor = 4.0;
  std::vector<int32_t> out;
  t.propose(std::vector<int32_t>{1, 2}, 3, o, &out);
  EXPECT_TRUE(out.empty());
  o.min_token_prob = 0.3;
  t.propose(std::vector<int32_t>{1, 2}, 3, o, &out);
  EXPECT_EQ(out, (std::vector<int32_t>{3}));  // ties: the lower id
}

TEST(SuffixTrie, SpecFactorBoundsDraftsByMatchLength) {
  Trie t = trie_of({{5, 1, 2, 3, 4, 6, 7}});
  SuffixDrafterOptions o;
  o.min_token_prob = 0.0;
  o.max_spec_factor = 1.0;
  std::vector<int32_t> out;
  EXPECT_EQ(t.propose(std::vector<int32_t>{9, 9, 1, 2}, 8, o, &out), 2);
  EXPECT_EQ(out, (std::vector<int32_t>{3, 4}));  // 1 x match of 2
}

TEST(SuffixTrie, SequencesDoNotJoin) {
  // "3" ends one sequence and "4" starts the next: "3 4" never occurred.
  Trie t = trie_of({{1, 2, 3}, {4, 5}});
  SuffixDrafterOptions o;
  o.min_token_prob = 0.0;
  std::vector<int32_t> out;
  EXPECT_EQ(t.propose(std::vector<int32_t>{3}, 2, o, &out), 0);
  EXPECT_TRUE(out.empty());
}

TEST(SuffixDrafter, LearnsFromTheRequestAndFromFinishedOutputs) {
  SuffixDrafterOptions o;
  o.min_token_prob = 0.0;
  o.max_spec_factor = 4.0;
  SuffixDrafter d(o);
  std::vector<int32_t> out;
  // Within a request: its own earlier tokens.
  const std::vector<int32_t> a = {10, 11, 12, 13, 14, 10, 11};
  EXPECT_EQ(d.propose(1, a, 3, 3, &out), 2);  // after a match of "10 11"
  EXPECT_EQ(out, (std::vector<int32_t>{12, 13, 14}));
  EXPECT_EQ(d.num_live_requests(), 1u);
  // Request 1 ends having output 20 21 22 23; a new request whose context
  // ends in "20 21" is offered what followed.
  d.finish(1, std::vector<int32_t>{1, 2, 3, 20, 21, 22, 23}, 3);
  EXPECT_EQ(d.num_live_requests(), 0u);
  out.clear();
  EXPECT_EQ(d.propose(2, std::vector<int32_t>{7, 8, 20, 21}, 2, 2, &out), 2);
  EXPECT_EQ(out, (std::vector<int32_t>{22, 23}));
  // The prompt of a finished request is not remembered.
  d.finish(2, std::vector<int32_t>{7, 8, 20, 21}, 4);
  out.clear();
  EXPECT_EQ(d.propose(3, std::vector<int32_t>{1, 2}, 2, 2, &out), 0);  // no drafts: no match
  EXPECT_TRUE(out.empty());
}

TEST(SuffixDrafter, ReportsTheMatchOfTheTrieItsDraftsCameFrom) {
  SuffixDrafterOptions o;
  o.min_token_prob = 0.0;
  o.max_spec_factor = 4.0;
  SuffixDrafter d(o);
  std::vector<int32_t> out;
  // A finished output holds "1 2 3 4 5 6"; the new request's own tokens
  // hold "9 4 5 7". Its context ends in "3 4 5": the global trie matches
  // 3 tokens and proposes 6; its own trie matches "4 5" (2) and proposes 7,
  // as long a proposal (1 draft) with a shorter match, so the global wins.
  d.finish(1, std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6}, 1);
  EXPECT_EQ(d.propose(2, std::vector<int32_t>{9, 4, 5, 7, 3, 4, 5}, 1, 1, &out), 3);
  EXPECT_EQ(out, (std::vector<int32_t>{6}));
  // With room for 2 drafts the own trie's "7 3" is longer than the
  // global's single "6" (the output ended there): the own trie's match.
  out.clear();
  EXPECT_EQ(d.propose(2, std::vector<int32_t>{9, 4, 5, 7, 3, 4, 5}, 1, 2, &out), 2);
  EXPECT_EQ(out, (std::vector<int32_t>{7, 3}));
}

TEST(SuffixDrafter, GlobalTreeStaysBounded) {
  SuffixDrafterOptions o;
  o.max_cached_requests = 4;
  SuffixDrafter d(o);
  for (uint64_t r = 0; r < 50; ++r) {
    std::vector<int32_t> tokens = {1, static_cast<int32_t>(r), static_cast<int32_t>(r + 1)};
    d.finish(r, tokens, 1);
  }
  // Still works after rebuilds: the latest output is remembered.
  std::vector<int32_t> out;
  o.min_token_prob = 0.0;
  d.propose(99, std::vector<int32_t>{49}, 1, 1, &out);
  EXPECT_EQ(out, (std::vector<int32_t>{50}));
}

}  // namespace
}  // namespace strata
