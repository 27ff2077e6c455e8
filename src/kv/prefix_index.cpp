#include "kv/prefix_index.h"

#include <mutex>

namespace strata {

void PrefixIndex::insert(const BlockHash& hash) {
  std::unique_lock lock(mu_);
  hashes_.insert(hash);
}

void PrefixIndex::erase(const BlockHash& hash) {
  std::unique_lock lock(mu_);
  hashes_.erase(hash);
}

int64_t PrefixIndex::count_leading(std::span<const BlockHash> chain) const {
  std::shared_lock lock(mu_);
  int64_t n = 0;
  while (n < static_cast<int64_t>(chain.size()) && hashes_.count(chain[static_cast<size_t>(n)])) {
    ++n;
  }
  return n;
}

int64_t PrefixIndex::size() const {
  std::shared_lock lock(mu_);
  return static_cast<int64_t>(hashes_.size());
}

}  // namespace strata
