#include "kv/block_hash.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata {
namespace {

// Goldens computed independently (Python hashlib) from the encoding written
// in block_hash.h; a change here breaks every persisted tier key.
TEST(BlockHashTest, RootSeedIsFixed) {
  EXPECT_EQ(root_block_hash().to_hex(),
            "fdd6db6c98f65232d2bde1fb40afba078d63d9eaf6d28ee1977c2806c1610272");
}

TEST(BlockHashTest, ChainMatchesWrittenEncoding) {
  const std::vector<int32_t> b0 = {1, 2, 3, 4};
  const std::vector<int32_t> b1 = {5, 6, 7, -1};
  const BlockHash h0 = hash_block(root_block_hash(), b0);
  EXPECT_EQ(h0.to_hex(), "dde9c664f9f588312b09b1bf94ed7f2d7caa5f2144796cc08ab3ce28614cc04f");
  EXPECT_EQ(hash_block(h0, b1).to_hex(),
            "2b3c7653612dd44d4ca130db5ad138162434e8ff66bfceff31edacd1b6303dad");
}

TEST(BlockHashTest, SaltIsAnExtraKey) {
  const std::vector<int32_t> b0 = {1, 2, 3, 4};
  EXPECT_EQ(hash_block(root_block_hash(), b0, "tenant-a").to_hex(),
            "5ead2021f3abf1c1a44ad84f9ca5f6a7a52fb94aa6d27c9f1ba1dbdc45374c1e");
  EXPECT_NE(hash_block(root_block_hash(), b0, "tenant-a"),
            hash_block(root_block_hash(), b0, "tenant-b"));
}

TEST(BlockHashTest, ParentAndOrderMatter) {
  const std::vector<int32_t> a = {1, 2, 3};
  const std::vector<int32_t> b = {3, 2, 1};
  const BlockHash root = root_block_hash();
  EXPECT_NE(hash_block(root, a), hash_block(root, b));
  const BlockHash p = hash_block(root, b);
  EXPECT_NE(hash_block(root, a), hash_block(p, a));
  EXPECT_EQ(hash_block(p, a), hash_block(p, a));
}

}  // namespace
}  // namespace strata
