// PrefixIndex: the set of block hashes the pool's prefix cache holds now,
// readable from any thread. The engine thread keeps it in step with the
// BlockPool (a hash enters when a block is cached, leaves when it is
// evicted); other threads - a router's probe arriving over HTTP - ask how
// many leading blocks of a chain are cached without touching engine state.
//
// An answer is exact at the moment it is given: a free cached block may be
// evicted a moment later, as it could be after any lookup.
//
// Thread-safe: insert/erase take an exclusive lock, queries a shared one.
#pragma once

#include <cstdint>
#include <shared_mutex>
#include <span>
#include <unordered_set>

#include "kv/block_hash.h"

namespace strata {

class PrefixIndex {
 public:
  void insert(const BlockHash& hash);
  void erase(const BlockHash& hash);

  // How many of `chain`'s leading hashes are cached (stops at the first
  // miss).
  int64_t count_leading(std::span<const BlockHash> chain) const;
  int64_t size() const;

 private:
  mutable std::shared_mutex mu_;
  std::unordered_set<BlockHash, BlockHashHasher> hashes_;
};

}  // namespace strata
