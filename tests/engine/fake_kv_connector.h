// FakeKvConnector: an in-memory KvConnector for engine tests, keyed by block
// (each full block's chained hash -> its K/V bytes), independent of the
// tiered cache's chunking. Loads are asynchronous in the sense the engine
// sees: start_load() only records the lookup; the next poll_loads() reports
// it ready (unless held). Knobs let a test corrupt loads (write fewer blocks
// than asked) and see what the engine told it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "engine/kv_connector.h"
#include "kvtier/chunk_io.h"

namespace strata::testing {

class FakeKvConnector final : public KvConnector {
 public:
  struct Shared {
    std::unordered_map<BlockHash, std::vector<uint8_t>, BlockHashHasher> blocks;
    int64_t num_loads_started = 0;
    int64_t num_blocks_loaded = 0;
    std::set<RequestId> finished;      // request_finished() calls
    int64_t max_blocks_per_load = -1;  // -1: all asked; else write at most this many
    bool hold_loads = false;           // poll_loads() reports nothing while set
  };
  FakeKvConnector(std::shared_ptr<Shared> shared, int32_t block_size)
      : shared_(std::move(shared)), block_size_(block_size) {}

  void set_wakeup(std::function<void()> wakeup) override { wakeup_ = std::move(wakeup); }

  int64_t start_load(const KvLoadQuery& q) override {
    const int64_t bs = block_size_;
    const int64_t max_blocks =
        std::min<int64_t>((static_cast<int64_t>(q.prompt_tokens.size()) - 1) / bs,
                          static_cast<int64_t>(q.block_hashes.size()));
    int64_t end = q.num_pool_tokens / bs;
    while (end < max_blocks && shared_->blocks.count(q.block_hashes[end])) ++end;
    if (end * bs <= q.num_pool_tokens) return 0;
    ++shared_->num_loads_started;
    Load& load = loads_[q.load_id];
    load.hashes.assign(q.block_hashes.begin(), q.block_hashes.begin() + end);
    load.num_tokens = end * bs;
    if (wakeup_) wakeup_();
    return end * bs - q.num_pool_tokens;
  }
  void cancel_load(uint64_t load_id) override { loads_.erase(load_id); }
  std::vector<KvLoadReady> poll_loads() override {
    std::vector<KvLoadReady> ready;
    if (shared_->hold_loads) return ready;
    for (auto& [id, load] : loads_) {
      if (load.is_reported) continue;
      load.is_reported = true;
      ready.push_back({id, load.num_tokens});
    }
    return ready;
  }
  int64_t load_blocks(uint64_t load_id, int64_t first_block, std::span<const int32_t> block_ids,
                      KvStorage& storage) override {
    auto it = loads_.find(load_id);
    if (it == loads_.end()) return 0;
    const Load load = std::move(it->second);
    loads_.erase(it);
    int64_t n = 0;
    for (size_t j = 0; j < block_ids.size(); ++j) {
      const size_t logical = static_cast<size_t>(first_block) + j;
      if (shared_->max_blocks_per_load >= 0 && n >= shared_->max_blocks_per_load) break;
      if (logical >= load.hashes.size()) break;
      auto b = shared_->blocks.find(load.hashes[logical]);
      if (b == shared_->blocks.end()) break;
      if (!scatter_chunk_payload(storage, b->second, block_ids.subspan(j, 1))) break;
      ++n;
    }
    shared_->num_blocks_loaded += n;
    return n;
  }
  void save(const KvSaveRequest& r, KvStorage& storage) override {
    const int64_t bs = storage.block_size();
    const int64_t num_full =
        std::min<int64_t>(r.num_computed_tokens / bs, static_cast<int64_t>(r.block_hashes.size()));
    for (int64_t i = 0; i < num_full; ++i) {
      if (shared_->blocks.count(r.block_hashes[i])) continue;
      shared_->blocks[r.block_hashes[i]] =
          gather_chunk_payload(storage, r.block_table.subspan(static_cast<size_t>(i), 1));
    }
  }
  void request_finished(RequestId id) override { shared_->finished.insert(id); }
  void flush() override {}

 private:
  struct Load {
    std::vector<BlockHash> hashes;
    int64_t num_tokens = 0;
    bool is_reported = false;
  };
  std::shared_ptr<Shared> shared_;
  int32_t block_size_;
  std::function<void()> wakeup_;
  std::map<uint64_t, Load> loads_;
};

}  // namespace strata::testing
