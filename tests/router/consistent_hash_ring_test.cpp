#include "router/consistent_hash_ring.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::router {
namespace {

std::vector<std::string> members(int n) {
  std::vector<std::string> m;
  for (int i = 0; i < n; ++i) m.push_back("http://replica-" + std::to_string(i) + ":8000");
  return m;
}

TEST(ConsistentHashRing, PreferenceListsEveryMemberOnce) {
  const ConsistentHashRing ring(members(5));
  const std::vector<size_t> p = ring.preference("session-42");
  ASSERT_EQ(p.size(), 5u);
  std::vector<bool> seen(5, false);
  for (size_t m : p) {
    EXPECT_FALSE(seen[m]);
    seen[m] = true;
  }
  EXPECT_TRUE(ConsistentHashRing({}).preference("x").empty());
}

TEST(ConsistentHashRing, KeysSpreadAndAddingAMemberMovesAboutOneNth) {
  const ConsistentHashRing three(members(3)), four(members(4));
  constexpr int kKeys = 20000;
  std::vector<int> load(3, 0);
  int moved = 0;
  for (int k = 0; k < kKeys; ++k) {
    const std::string key = "user-" + std::to_string(k);
    const size_t before = three.preference(key).front();
    const size_t after = four.preference(key).front();
    ++load[before];
    if (after != before) {
      ++moved;
      EXPECT_EQ(after, 3u) << "a key moved between two old members";
    }
  }
  for (int l : load) EXPECT_NEAR(l, kKeys / 3, kKeys / 10);
  EXPECT_NEAR(static_cast<double>(moved) / kKeys, 0.25, 0.06);
}

}  // namespace
}  // namespace strata::router
