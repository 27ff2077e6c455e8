// ConsistentHashRing: maps a session key to an ordered list of members, so
// that adding or removing one of N members moves about 1/N of the keys.
// Each member owns `points_per_member` points on a 64-bit ring (xxh64 of
// "name#i"); a key walks clockwise from its own hash and meets the members
// in an order that is its preference list (its home first, then where it
// goes when the home is down).
//
// A plain value; const methods are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::router {

class ConsistentHashRing {
 public:
  explicit ConsistentHashRing(std::vector<std::string> members, int points_per_member = 160);

  // Every member, the key's home first. Empty when there are none.
  std::vector<size_t> preference(std::string_view key) const;
  const std::vector<std::string>& members() const { return members_; }

 private:
  std::vector<std::string> members_;
  std::vector<std::pair<uint64_t, size_t>> points_;  // (hash, member), sorted
};

}  // namespace strata::router
