#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

#include "kv/free_block_queue.h"

namespace strata {
namespace {

using Ids = std::vector<int32_t>;

TEST(FreeBlockQueueTest, PushPopRemoveKeepOrder) {
  FreeBlockQueue q(5);
  EXPECT_EQ(q.to_vector(), (Ids{0, 1, 2, 3, 4}));
  EXPECT_EQ(q.pop_front(), 0);
  q.remove(2);  // middle
  q.remove(4);  // tail
  EXPECT_EQ(q.to_vector(), (Ids{1, 3}));
  q.push_back(0);
  q.push_back(4);
  q.remove(1);  // head
  EXPECT_EQ(q.to_vector(), (Ids{3, 0, 4}));
  EXPECT_EQ(q.size(), 3);
  EXPECT_FALSE(q.contains(2));
  EXPECT_TRUE(q.contains(4));
  EXPECT_EQ(q.pop_front(), 3);
  EXPECT_EQ(q.pop_front(), 0);
  EXPECT_EQ(q.pop_front(), 4);
  EXPECT_EQ(q.size(), 0);
  q.push_back(2);
  EXPECT_EQ(q.to_vector(), (Ids{2}));
}

TEST(BlockPoolTest, AllocateHandsOutLowestIdsFirstWithRefcountOne) {
  BlockPool pool(5, 4);
  Ids got;
  pool.allocate(3, &got);
  EXPECT_EQ(got, (Ids{0, 1, 2}));
  EXPECT_EQ(pool.num_free_blocks(), 2);
  for (int32_t id : got) EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_DOUBLE_EQ(pool.usage(), 3.0 / 5.0);
}

TEST(BlockPoolTest, ReleaseOrderIsEvictionOrder) {
  BlockPool pool(5, 4);
  Ids got;
  pool.allocate(3, &got);
  const Ids tail_first = {2, 1, 0};
  pool.release(tail_first);
  EXPECT_EQ(pool.free_queue_order(), (Ids{3, 4, 2, 1, 0}));
  Ids next;
  pool.allocate(3, &next);
  EXPECT_EQ(next, (Ids{3, 4, 2}));
}

TEST(BlockPoolTest, SharedBlockCountsEveryHolder) {
  BlockPool pool(3, 2);
  Ids a;
  pool.allocate(1, &a);
  const Ids shared = {a[0]};
  pool.touch(shared);
  pool.touch(shared);
  EXPECT_EQ(pool.ref_count(a[0]), 3);
  pool.release(shared);
  pool.release(shared);
  EXPECT_EQ(pool.ref_count(a[0]), 1);
  EXPECT_FALSE(pool.is_free(a[0]));
  pool.release(shared);
  EXPECT_TRUE(pool.is_free(a[0]));
  EXPECT_EQ(pool.free_queue_order(), (Ids{1, 2, 0}));
}

TEST(BlockPoolTest, FreedCachedBlockStaysFindableUntilReused) {
  BlockPool pool(3, 2);
  const std::vector<int32_t> toks = {7, 8};
  const BlockHash h = hash_block(root_block_hash(), toks);
  Ids got;
  pool.allocate(1, &got);  // block 0
  ASSERT_TRUE(pool.cache(0, h, root_block_hash(), toks));
  pool.release(got);
  EXPECT_EQ(pool.free_queue_order(), (Ids{1, 2, 0}));
  ASSERT_EQ(pool.lookup(h, root_block_hash(), toks), 0);
  // Reviving it takes it out of the free queue.
  pool.touch(got);
  EXPECT_EQ(pool.ref_count(0), 1);
  EXPECT_EQ(pool.free_queue_order(), (Ids{1, 2}));
  pool.release(got);
  // Reuse evicts: blocks 1, 2 go first, then 0 loses its hash.
  Ids more;
  pool.allocate(2, &more);
  EXPECT_EQ(more, (Ids{1, 2}));
  EXPECT_TRUE(pool.lookup(h, root_block_hash(), toks).has_value());
  pool.allocate(1, &more);
  EXPECT_EQ(more.back(), 0);
  EXPECT_FALSE(pool.is_cached(0));
  EXPECT_FALSE(pool.lookup(h, root_block_hash(), toks).has_value());
  EXPECT_EQ(pool.num_cached_blocks(), 0);
}

TEST(BlockPoolTest, LookupVerifiesTokensAndParent) {
  BlockPool pool(2, 3);
  const std::vector<int32_t> toks = {1, 2, 3};
  const BlockHash h = hash_block(root_block_hash(), toks);
  Ids got;
  pool.allocate(1, &got);
  ASSERT_TRUE(pool.cache(got[0], h, root_block_hash(), toks));
  const std::vector<int32_t> other = {1, 2, 4};
  // Same key, different stored tokens: a forged or colliding key is no hit.
  EXPECT_FALSE(pool.lookup(h, root_block_hash(), other).has_value());
  EXPECT_FALSE(pool.lookup(h, h, toks).has_value());
  EXPECT_EQ(pool.lookup(h, root_block_hash(), toks), got[0]);
}

TEST(BlockPoolTest, SecondBlockWithSameKeyIsNotCached) {
  BlockPool pool(2, 1);
  const std::vector<int32_t> toks = {9};
  const BlockHash h = hash_block(root_block_hash(), toks);
  Ids got;
  pool.allocate(2, &got);
  EXPECT_TRUE(pool.cache(got[0], h, root_block_hash(), toks));
  EXPECT_FALSE(pool.cache(got[1], h, root_block_hash(), toks));
  EXPECT_FALSE(pool.is_cached(got[1]));
  EXPECT_EQ(pool.num_cached_blocks(), 1);
  EXPECT_EQ(pool.cached_entries().size(), 1u);
}

TEST(BlockPoolTest, PrefixIndexFollowsCachingAndEviction) {
  BlockPool pool(2, 2);
  const std::vector<int32_t> a = {1, 2}, b = {3, 4};
  const BlockHash ha = hash_block(root_block_hash(), a);
  const BlockHash hb = hash_block(ha, b);
  Ids got;
  pool.allocate(2, &got);
  ASSERT_TRUE(pool.cache(got[0], ha, root_block_hash(), a));
  EXPECT_EQ(pool.index().count_leading(std::vector<BlockHash>{ha, hb}), 1);
  ASSERT_TRUE(pool.cache(got[1], hb, ha, b));
  EXPECT_EQ(pool.index().count_leading(std::vector<BlockHash>{ha, hb}), 2);
  EXPECT_EQ(pool.index().count_leading(std::vector<BlockHash>{hb}), 1);
  // Freed, the blocks stay cached (and indexed) until reused.
  pool.release(Ids{got[1], got[0]});
  EXPECT_EQ(pool.index().size(), 2);
  Ids again;
  pool.allocate(1, &again);  // takes got[1] (freed first): hb is evicted
  EXPECT_EQ(pool.index().count_leading(std::vector<BlockHash>{ha, hb}), 1);
  EXPECT_EQ(pool.index().size(), 1);
}

}  // namespace
}  // namespace strata
