#include "disagg/kv_publisher.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "kvtier/chunk_io.h"

namespace strata::disagg {

KvPublisher::KvPublisher(const ModelFingerprint& fingerprint, int32_t block_size,
                         int32_t chunk_tokens)
    : fingerprint_(fingerprint),
      block_size_(block_size),
      chunk_tokens_(chunk_tokens),
      blocks_per_chunk_(chunk_tokens / block_size) {}

uint64_t KvPublisher::subscribe(std::vector<ChunkKey> keys, int32_t first_chunk, Sink sink) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t id = next_id_++;
  sinks_[id] = std::move(sink);
  for (size_t i = 0; i < keys.size(); ++i) {
    waiters_[keys[i]].push_back(Waiter{id, first_chunk + static_cast<int32_t>(i)});
  }
  return id;
}

void KvPublisher::unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  sinks_.erase(id);
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    std::erase_if(it->second, [id](const Waiter& w) { return w.subscription == id; });
    it = it->second.empty() ? waiters_.erase(it) : std::next(it);
  }
}

void KvPublisher::save(const KvSaveRequest& r, KvStorage& storage) {
  int64_t& num_checked = num_checked_chunks_[r.request_id];
  const int64_t num_chunks =
      std::min<int64_t>(r.num_computed_tokens / chunk_tokens_,
                        static_cast<int64_t>(r.block_hashes.size()) / blocks_per_chunk_);
  std::lock_guard<std::mutex> lock(mu_);
  if (waiters_.empty()) {
    num_checked = std::max(num_checked, num_chunks);
    return;
  }
  for (int64_t k = num_checked; k < num_chunks; ++k) {
    const ChunkKey key = make_chunk_key(
        fingerprint_, r.block_hashes[static_cast<size_t>((k + 1) * blocks_per_chunk_ - 1)]);
    auto it = waiters_.find(key);
    if (it == waiters_.end()) continue;
    auto chunk = std::make_shared<KvChunk>();
    chunk->key = key;
    chunk->num_tokens = chunk_tokens_;
    chunk->payload = gather_chunk_payload(
        storage, r.block_table.subspan(static_cast<size_t>(k * blocks_per_chunk_),
                                       static_cast<size_t>(blocks_per_chunk_)));
    const KvChunkHandle handle = std::move(chunk);
    for (const Waiter& w : it->second) {
      if (auto s = sinks_.find(w.subscription); s != sinks_.end()) s->second(w.chunk_index, handle);
    }
    waiters_.erase(it);
  }
  num_checked = std::max(num_checked, num_chunks);
}

}  // namespace strata::disagg
