#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
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
  o.enable_prefix_caching = true;
  o.num_blocks = num_blocks;
  o.block_size = block_size;
  EXPECT_TRUE(o.validate().is_ok());
  return KvCacheManager(o);
}

// The read-only prefix query, with the chain hashed as the scheduler does.
PrefixHit query(const KvCacheManager& kv, const std::vector<int32_t>& toks,
                std::string_view salt = {}) {
  return kv.find_prefix(toks, block_hashes_of(toks, kv.block_size(), salt));
}

// Runs a sequence's full prefill: query, allocate, mark computed.
Ids prefill(KvCacheManager& kv, uint64_t id, const std::vector<int32_t>& toks,
            std::string_view salt = {}) {
  PrefixHit hit = query(kv, toks, salt);
  EXPECT_TRUE(kv.allocate(id, hit, static_cast<int64_t>(toks.size())));
  kv.commit_computed(id, toks, block_hashes_of(toks, kv.block_size(), salt),
                     static_cast<int64_t>(toks.size()));
  return kv.block_table(id);
}

TEST(KvCacheOptionsTest, RejectsBadValues) {
  KvCacheOptions o;
  o.block_size = 16;
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
  PrefixHit hit = query(kv, toks, "");
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
  PrefixHit hit = query(kv, toks, "");
  EXPECT_EQ(hit.block_ids, (Ids{0}));
  EXPECT_EQ(hit.num_tokens, 4);
}

TEST(KvCacheManagerTest, SaltSeparatesIdenticalPrompts) {
  KvCacheManager kv = make(10, 4);
  const auto toks = iota_tokens(12);
  prefill(kv, 1, toks, "alice");
  EXPECT_TRUE(query(kv, toks, "bob").block_ids.empty());
  EXPECT_TRUE(query(kv, toks, "").block_ids.empty());
  EXPECT_EQ(query(kv, toks, "alice").block_ids, (Ids{0, 1}));
}

TEST(KvCacheManagerTest, DivergingPromptsShareTheCommonBlocks) {
  KvCacheManager kv = make(10, 2);
  prefill(kv, 1, {1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(query(kv, Ids{1, 2, 3, 4, 9, 9, 9}, "").block_ids, (Ids{0, 1}));
  EXPECT_EQ(query(kv, Ids{1, 2, 9, 4, 5, 6, 7}, "").block_ids, (Ids{0}));
  EXPECT_TRUE(query(kv, Ids{9, 2, 3, 4, 5, 6, 7}, "").block_ids.empty());
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
  EXPECT_EQ(query(kv, a, "").block_ids, (Ids{0, 1, 2}));
  // Two more blocks evict a's tail (block 2) first, then block 1.
  ASSERT_TRUE(kv.allocate(2, {}, 7));
  EXPECT_EQ(kv.block_table(2).back(), 2);
  EXPECT_EQ(query(kv, a, "").block_ids, (Ids{0, 1}));
  ASSERT_TRUE(kv.allocate(2, {}, 9));
  EXPECT_EQ(kv.block_table(2).back(), 1);
  EXPECT_EQ(query(kv, a, "").block_ids, (Ids{0}));
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
  PrefixHit hit = query(kv, toks, "");
  EXPECT_EQ(hit.block_ids, (Ids{0, 1}));
  EXPECT_TRUE(kv.can_allocate(2, hit, 12));
  EXPECT_FALSE(kv.can_allocate(2, hit, 13));
}

TEST(KvCacheManagerTest, RevivingFreeCachedBlocksCountsAgainstFreeSpace) {
  KvCacheManager kv = make(3, 2);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5};
  prefill(kv, 1, a);  // blocks 0,1 cached, 2 partial
  kv.remove(1);
  PrefixHit hit = query(kv, a, "");
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
  PrefixHit hit = query(kv, a, "");
  EXPECT_EQ(hit.block_ids, (Ids{0, 1}));
  ASSERT_TRUE(kv.allocate(7, hit, 6));
  // Block 2 holds the last token, which must be recomputed: a fresh block.
  EXPECT_EQ(kv.block_table(7), (Ids{0, 1, 3}));
}

TEST(KvCacheManagerTest, FindPrefixChangesNothing) {
  KvCacheManager kv = make(4, 2);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5};
  prefill(kv, 1, a);
  kv.remove(1);
  const Ids order = kv.pool().free_queue_order();
  EXPECT_EQ(query(kv, a).block_ids, (Ids{0, 1}));
  EXPECT_EQ(kv.pool().free_queue_order(), order);
  EXPECT_TRUE(kv.seq_ids().empty());
}

TEST(KvCacheManagerTest, InsertedBlocksAreCachedFreeAndHit) {
  KvCacheManager kv = make(6, 2);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6, 7};  // 3 full blocks
  const std::vector<BlockHash> hashes = block_hashes_of(a, 2);
  // Block 0 is computed by a sequence; blocks 1 and 2 arrive from outside.
  prefill(kv, 1, {1, 2, 3});
  kv.remove(1);
  std::vector<int32_t> taken;
  ASSERT_TRUE(kv.take_blocks(2, &taken));
  EXPECT_EQ(taken.size(), 2u);
  EXPECT_EQ(kv.num_free_blocks(), 4);  // held by the caller meanwhile
  for (int32_t b : taken) EXPECT_EQ(kv.pool().ref_count(b), 1);
  kv.insert_computed_blocks(taken, a, hashes, /*first_block=*/1);
  EXPECT_EQ(kv.num_free_blocks(), 6);
  EXPECT_TRUE(kv.seq_ids().empty());
  const PrefixHit hit = query(kv, a);
  EXPECT_EQ(hit.block_ids, (Ids{0, taken[0], taken[1]}));
  // The run's head stays longest: the last inserted block is reused first
  // among them.
  const Ids order = kv.pool().free_queue_order();
  EXPECT_LT(std::find(order.begin(), order.end(), taken[1]),
            std::find(order.begin(), order.end(), taken[0]));
}

TEST(KvCacheManagerTest, TakeBlocksIsAllOrNothingAndReleaseCachesNothing) {
  KvCacheManager kv = make(3, 2);
  std::vector<int32_t> taken;
  EXPECT_FALSE(kv.take_blocks(4, &taken));
  EXPECT_TRUE(taken.empty());
  ASSERT_TRUE(kv.take_blocks(3, &taken));
  EXPECT_EQ(kv.num_free_blocks(), 0);
  EXPECT_FALSE(kv.can_allocate(1, {}, 1));
  kv.release_blocks(taken);
  EXPECT_EQ(kv.num_free_blocks(), 3);
  EXPECT_EQ(kv.pool().num_cached_blocks(), 0);
}

TEST(KvCacheManagerTest, InsertingAnAlreadyCachedBlockKeepsTheFirst) {
  KvCacheManager kv = make(6, 2);
  const std::vector<int32_t> a = {1, 2, 3, 4, 5};
  const Ids table = prefill(kv, 1, a);  // blocks 0, 1 cached, held by seq 1
  std::vector<int32_t> taken;
  ASSERT_TRUE(kv.take_blocks(1, &taken));
  kv.insert_computed_blocks(taken, a, block_hashes_of(a, 2), /*first_block=*/1);
  EXPECT_FALSE(kv.pool().is_cached(taken[0]));
  EXPECT_EQ(query(kv, a).block_ids, (Ids{table[0], table[1]}));
  EXPECT_EQ(kv.num_free_blocks(), 6 - 3);
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
  EXPECT_TRUE(query(kv, a, "").block_ids.empty());
}

}  // namespace
}  // namespace strata
