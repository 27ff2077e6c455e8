#include "kvtier/ram_tier.h"

namespace strata {

RamTier::RamTier(size_t capacity_bytes) : capacity_bytes_(capacity_bytes) {}

bool RamTier::contains(const ChunkKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(key) != 0;
}

Status RamTier::put(const KvChunkHandle& chunk) {
  if (chunk == nullptr) return invalid_argument("ram tier: null chunk");
  const size_t bytes = chunk->payload.size();
  if (bytes > capacity_bytes_) {
    return invalid_argument("ram tier: chunk of " + std::to_string(bytes) +
                            " bytes exceeds the capacity " + std::to_string(capacity_bytes_) +
                            " (raise --kv-cpu-bytes)");
  }
  const TierTimer timer;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(chunk->key);
  if (it != entries_.end()) {  // idempotent: keep the stored copy, refresh its recency
    lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
    return Status::ok();
  }
  int64_t num_evicted = 0;
  while (stored_bytes_ + bytes > capacity_bytes_ && !lru_.empty()) {
    auto victim = entries_.find(lru_.back());
    stored_bytes_ -= victim->second.chunk->payload.size();
    entries_.erase(victim);
    lru_.pop_back();
    ++num_evicted;
  }
  lru_.push_front(chunk->key);
  entries_.emplace(chunk->key, Entry{chunk, lru_.begin()});
  stored_bytes_ += bytes;
  if (num_evicted > 0) recorder_.record_evictions(num_evicted);
  recorder_.record_put(static_cast<int64_t>(bytes), timer.seconds());
  publish_gauges_locked();
  return Status::ok();
}

Result<KvChunkHandle> RamTier::get(const ChunkKey& key) {
  const TierTimer timer;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    recorder_.record_miss(timer.seconds());
    return not_found("ram tier: no chunk " + key.hex());
  }
  lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
  recorder_.record_hit(static_cast<int64_t>(it->second.chunk->payload.size()), timer.seconds());
  return it->second.chunk;
}

Status RamTier::remove(const ChunkKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return Status::ok();
  stored_bytes_ -= it->second.chunk->payload.size();
  lru_.erase(it->second.lru_pos);
  entries_.erase(it);
  publish_gauges_locked();
  return Status::ok();
}

TierStats RamTier::stats() const {
  return recorder_.snapshot();
}

void RamTier::publish_gauges_locked() {
  recorder_.set_stored(static_cast<int64_t>(entries_.size()), static_cast<int64_t>(stored_bytes_));
}

}  // namespace strata
