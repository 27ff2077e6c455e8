#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace strata {
namespace {

using Ids = std::vector<int32_t>;

std::vector<int32_t> iota_tokens(int n, int32_t start = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

KvCacheManager make(int32_t num_blocks, int32_t block_size) {
  KvCacheOptions o;
  o.num_blocks = num_blocks;
  o.block_size = block_size;
  EXPECT_TRUE(o.validate().is_ok());
  return KvCacheManager(o);
}

// Runs a sequence's full prefill: query, allocate, mark computed.
Ids prefill(KvCacheManager& kv, uint64_t id, const std::vector<int32_t>& toks,
            std::string_view salt = {}) {
  PrefixHit hit = kv.find_prefix(id, toks, salt);
  EXPECT_TRUE(kv.allocate(id, hit, static_cast<int64_t>(toks.size())));
  kv.commit_computed(id, toks, static_cast<int64_t>(toks.size()));
  return kv.block_table(id);
}

TEST(KvCacheOptionsTest, RejectsBadValues) {
  KvCacheOptions o;
  o.num_blocks = 0;
  Status s = o.validate();
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("--kv-cache-memory"), std::string::npos);
  o.num_blocks = 4;
  o.block_size = 0;
  EXPECT_FALSE(o.validate().is_ok());
}

TEST(KvCacheManagerTest, BlockTableCoversTokens) {
  KvCacheManager kv = make(10, 4);
  const auto toks = iota_tokens(9);  // 2 full blocks + 1 token
  EXPECT_EQ(prefill(kv, 1, toks), (Ids{0, 1, 2}));
  EXPECT_EQ(kv.num_free_blocks(), 7);
  // Decode: growing to 12 tokens needs no block, 13 needs one more.
  EXPECT_TRUE(kv.allocate(1, {}, 12));
  EXPECT_EQ(kv.block_table(1).size(), 3u);
  EXPECT_TRUE(kv.allocate(1, {}, 13));
  EXPECT_EQ(kv.block_table(1), (Ids{0, 1, 2, 3}));
}

TEST(KvCacheManagerTest, PrefixHitSharesFullBlocksOnly) {
  KvCacheManager kv = make(10, 4);
  const auto toks = iota_tokens(10);
  EXPECT_EQ(prefill(kv, 1, toks), (Ids{0, 1, 2}));
  EXPECT_EQ(kv.pool().num_cached_blocks(), 2);  // block 2 is partial
  PrefixHit hit = kv.find_prefix(2, toks, "");
  EXPECT_EQ(hit.block_ids, (Ids{0, 1}));
  EXPECT_EQ(hit.num_tokens, 8);
  ASSERT_TRUE(kv.allocate(2, hit, 10));
  EXPECT_EQ(kv.block_table(2), (Ids{0, 1, 3}));
  EXPECT_EQ(kv.pool().ref_count(0), 2);
  EXPECT_EQ(kv.pool().ref_count(1), 2);
  EXPECT_EQ(kv.pool().ref_count(2), 1);
  EXPECT_EQ(kv.pool().ref_count(3), 1);
}

TEST(KvCacheManagerTest, LastTokenIsNeverServedFromCache) {
  KvCacheManager kv = make(10, 4);
  const auto toks = iota_tokens(8);  // exactly two full blocks
  prefill(kv, 1, toks);
  EXPECT_EQ(kv.pool().num_cached_blocks(), 2);
  PrefixHit hit = kv.find_prefix(2, toks, "");
  EXPECT_EQ(hit.block_ids, (Ids{0}));
  EXPECT_EQ(hit.num_tokens, 4);
}

TEST(KvCacheManagerTest, SaltSeparatesIdenticalPrompts) {
  KvCacheManager kv = make(10, 4);
  const auto toks = iota_tokens(12);
  prefill(kv, 1, toks, "alice");
  EXPECT_TRUE(kv.find_prefix(2, toks, "bob").block_ids.empty());
  EXPECT_TRUE(kv.find_prefix(3, toks, "").block_ids.empty());
  EXPECT_EQ(kv.find_prefix(4, toks, "alice").block_ids, (Ids{0, 1}));
}

TEST(KvCacheManagerTest, DivergingPromptsShareTheCommonBlocks) {
  KvCacheManager kv = make(10, 2);
  prefill(kv, 1, {1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(kv.find_prefix(2, Ids{1, 2, 3, 4, 9, 9, 9}, "").block_ids, (Ids{0, 1}));
  EXPECT_EQ(kv.find_prefix(3, Ids{1, 2, 9, 4, 5, 6, 7}, "").block_ids, (Ids{0}));
  EXPECT_TRUE(kv.find_prefix(4, Ids{9, 2, 3, 4, 5, 6, 7}, "").block_ids.empty());
}

TEST(KvCacheManagerTest, FreeIsTailFirstAndEvictionTakesTailsBeforeHeads) {
  KvCacheManager kv = make(6, 2);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7};  // blocks 0,1,2 full, 3 partial
  EXPECT_EQ(prefill(kv, 1, a), (Ids{0, 1, 2, 3}));
  kv.remove(1);
  EXPECT_EQ(kv.pool().free_queue_order(), (Ids{4, 5, 3, 2, 1, 0}));
  EXPECT_EQ(kv.pool().num_cached_blocks(), 3);
  // A 5-token sequence with other tokens takes 4, 5, then 3 (uncached), so
  // every cached block of `a` survives.
  const std::vector<int32_t> b = {9, 9, 9, 9, 9};
  EXPECT_EQ(prefill(kv, 2, b), (Ids{4, 5, 3}));
  EXPECT_EQ(kv.find_prefix(3, a, "").block_ids, (Ids{0, 1, 2}));
  // Two more blocks evict a's tail (block 2) first, then block 1.
  ASSERT_TRUE(kv.allocate(2, {}, 7));
  EXPECT_EQ(kv.block_table(2).back(), 2);
  EXPECT_EQ(kv.find_prefix(3, a, "").block_ids, (Ids{0, 1}));
  ASSERT_TRUE(kv.allocate(2, {}, 9));
  EXPECT_EQ(kv.block_table(2).back(), 1);
  EXPECT_EQ(kv.find_prefix(3, a, "").block_ids, (Ids{0}));
}

TEST(KvCacheManagerTest, QueryThenCommit) {
  KvCacheManager kv = make(4, 4);
  const auto toks = iota_tokens(12);
  prefill(kv, 1, toks);  // blocks 0, 1, 2, all full and cached
  EXPECT_EQ(kv.num_free_blocks(), 1);
  EXPECT_FALSE(kv.can_allocate(2, {}, 8));
  EXPECT_FALSE(kv.allocate(2, {}, 8));
  EXPECT_TRUE(kv.block_table(2).empty());
  EXPECT_EQ(kv.num_free_blocks(), 1);
  // The hit stops before the last token: blocks 0 and 1 (still held by
  // seq 1), so 12 tokens need 1 fresh block.
  PrefixHit hit = kv.find_prefix(2, toks, "");
  EXPECT_EQ(hit.block_ids, (Ids{0, 1}));
  EXPECT_TRUE(kv.can_allocate(2, hit, 12));
  EXPECT_FALSE(kv.can_allocate(2, hit, 13));
}

TEST(KvCacheManagerTest, RevivingFreeCachedBlocksCountsAgainstFreeSpace) {
  KvCacheManager kv = make(3, 2);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5};
  prefill(kv, 1, a);  // blocks 0,1 cached, 2 partial
  kv.remove(1);
  PrefixHit hit = kv.find_prefix(2, a, "");
  ASSERT_EQ(hit.block_ids, (Ids{0, 1}));
  // 5 tokens: 2 revived + 1 fresh = all 3 blocks.
  EXPECT_TRUE(kv.can_allocate(2, hit, 5));
  // 7 tokens would need a 4th.
  EXPECT_FALSE(kv.can_allocate(2, hit, 7));
  ASSERT_TRUE(kv.allocate(2, hit, 5));
  EXPECT_EQ(kv.block_table(2), (Ids{0, 1, 2}));
  EXPECT_EQ(kv.num_free_blocks(), 0);
}

TEST(KvCacheManagerTest, PreemptedSequenceKeepsHashesAndRehits) {
  KvCacheManager kv = make(8, 2);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6};
  prefill(kv, 7, a);
  kv.free(7);
  EXPECT_TRUE(kv.block_table(7).empty());
  PrefixHit hit = kv.find_prefix(7, a, "");
  EXPECT_EQ(hit.block_ids, (Ids{0, 1}));
  ASSERT_TRUE(kv.allocate(7, hit, 6));
  // Block 2 holds the last token, which must be recomputed: a fresh block.
  EXPECT_EQ(kv.block_table(7), (Ids{0, 1, 3}));
}

TEST(KvCacheManagerTest, StatsAccumulate) {
  KvCacheManager kv = make(4, 4);
  kv.record_prefix_query(10, 8);
  kv.record_prefix_query(5, 0);
  EXPECT_EQ(kv.stats().prefix_query_tokens, 15);
  EXPECT_EQ(kv.stats().prefix_hit_tokens, 8);
}

TEST(KvCacheManagerTest, DisabledPrefixCachingNeverHits) {
  KvCacheOptions o;
  o.num_blocks = 8;
  o.block_size = 2;
  o.enable_prefix_caching = false;
  KvCacheManager kv(o);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5};
  prefill(kv, 1, a);
  EXPECT_EQ(kv.pool().num_cached_blocks(), 0);
  EXPECT_TRUE(kv.find_prefix(2, a, "").block_ids.empty());
}

}  // namespace
}  // namespace strata
