#include "router/consistent_hash_ring.h"

#include <xxhash.h>

#include <algorithm>

namespace strata::router {
namespace {

uint64_t hash_of(std::string_view s) {
  return XXH64(s.data(), s.size(), /*seed=*/0x5eed);
}

}  // namespace

ConsistentHashRing::ConsistentHashRing(std::vector<std::string> members, int points_per_member)
    : members_(std::move(members)) {
  points_.reserve(members_.size() * static_cast<size_t>(points_per_member));
  for (size_t m = 0; m < members_.size(); ++m) {
    for (int i = 0; i < points_per_member; ++i) {
      points_.emplace_back(hash_of(members_[m] + "#" + std::to_string(i)), m);
    }
  }
  std::sort(points_.begin(), points_.end());
}

std::vector<size_t> ConsistentHashRing::preference(std::string_view key) const {
  std::vector<size_t> order;
  if (points_.empty()) return order;
  const uint64_t h = hash_of(key);
  auto it = std::lower_bound(points_.begin(), points_.end(), std::make_pair(h, size_t{0}));
  std::vector<bool> seen(members_.size(), false);
  for (size_t step = 0; step < points_.size() && order.size() < members_.size(); ++step) {
    if (it == points_.end()) it = points_.begin();
    if (!seen[it->second]) {
      seen[it->second] = true;
      order.push_back(it->second);
    }
    ++it;
  }
  return order;
}

}  // namespace strata::router
