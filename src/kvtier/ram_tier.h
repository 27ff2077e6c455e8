// RamTier: the host-RAM tier, a bounded LRU map from ChunkKey to the shared
// chunk handle. put() inserts the handle itself (no copy of the payload); a
// handle evicted here stays alive while anyone else holds it.
//
// Capacity counts payload bytes. Every operation is O(1) (hash map + intrusive
// order list). get() and put() of a present key make it most recently used.
// Thread-safe (one mutex, never held across I/O: there is none).
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <unordered_map>

#include "kvtier/kv_tier.h"

namespace strata {

class RamTier final : public KvTier {
 public:
  explicit RamTier(size_t capacity_bytes);

  std::string_view name() const override { return "ram"; }
  bool is_memory() const override { return true; }
  bool contains(const ChunkKey& key) override;
  Status put(const KvChunkHandle& chunk) override;
  Result<KvChunkHandle> get(const ChunkKey& key) override;
  Status remove(const ChunkKey& key) override;
  TierStats stats() const override;

  size_t capacity_bytes() const { return capacity_bytes_; }

 private:
  struct Entry {
    KvChunkHandle chunk;
    std::list<ChunkKey>::iterator lru_pos;  // front = most recently used
  };

  void publish_gauges_locked();

  const size_t capacity_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<ChunkKey, Entry, ChunkKeyHash> entries_;
  std::list<ChunkKey> lru_;
  size_t stored_bytes_ = 0;
  TierStatsRecorder recorder_;
};

}  // namespace strata
