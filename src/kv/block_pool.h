// BlockPool: the bookkeeping of the paged KV cache's physical blocks —
// reference counts, the free-block LRU queue and the prefix-cache map from
// BlockHash to block id. The KV bytes themselves live in KvStorage
// (runtime/), indexed by the same block ids.
//
// A block is in exactly one of three states:
//   referenced   ref_count > 0, held by that many block tables; not in the
//                free queue; may be cached (hashed).
//   free+cached  ref_count == 0, in the free queue, still in the hash map: a
//                later prompt with the same prefix can revive it (touch()).
//   free         ref_count == 0, in the free queue, no hash.
// allocate() takes blocks from the front of the free queue (least recently
// freed) and evicts their hash at that moment, so a freed block stays
// findable until it is actually reused. Only full blocks are ever cached, so
// a cached block's contents never change and sharing needs no copy-on-write.
// A cached block's entry also keeps its token ids and parent key: a lookup
// is a hit only if both match (a hash match alone is not trusted).
//
// Owned by KvCacheManager; single-threaded (the engine thread), except
// index(), which any thread may query.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kv/block_hash.h"
#include "kv/free_block_queue.h"
#include "kv/prefix_index.h"

namespace strata {

class BlockPool {
 public:
  // Preconditions: num_blocks >= 1, block_size >= 1 (validated by KvCacheOptions).
  BlockPool(int32_t num_blocks, int32_t block_size);

  int32_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  // Blocks with ref_count 0 (cached or not): what allocate() can hand out.
  int32_t num_free_blocks() const { return free_queue_.size(); }
  int32_t num_cached_blocks() const { return static_cast<int32_t>(cached_.size()); }
  // Fraction of blocks referenced by some block table, in [0, 1].
  double usage() const;

  // Appends `n` blocks to `out`, each with ref_count 1, taken from the front
  // of the free queue; a taken block's hash is evicted. Precondition:
  // n <= num_free_blocks() (ask first; running out is the caller's decision).
  void allocate(int32_t n, std::vector<int32_t>* out);
  // Adds one reference to each block (prefix-cache hits). A block at
  // ref_count 0 leaves the free queue.
  void touch(std::span<const int32_t> block_ids);
  // Drops one reference from each block, in the given order; a block that
  // reaches 0 goes to the back of the free queue. Pass a request's blocks
  // tail first so its prefix's tail is evicted before its head.
  void release(std::span<const int32_t> block_ids);

  // The cached block with key `hash` whose stored parent key and tokens
  // equal `parent` and `tokens`, if any. No state change.
  std::optional<int32_t> lookup(const BlockHash& hash, const BlockHash& parent,
                                std::span<const int32_t> tokens) const;
  // Registers referenced, full, uncached block `block_id` under `hash`.
  // Returns false (and caches nothing) when another block already holds
  // that key (two requests computed the same prefix in the same step).
  bool cache(int32_t block_id, const BlockHash& hash, const BlockHash& parent,
             std::span<const int32_t> tokens);

  // Introspection, for metrics and invariant checks.
  int32_t ref_count(int32_t block_id) const { return blocks_[block_id].ref_count; }
  bool is_free(int32_t block_id) const { return free_queue_.contains(block_id); }
  bool is_cached(int32_t block_id) const { return blocks_[block_id].is_cached; }
  const BlockHash& hash_of(int32_t block_id) const { return blocks_[block_id].hash; }
  // [block_size] token ids of a cached block.
  std::span<const int32_t> tokens_of(int32_t block_id) const;
  // (hash, block id) of every cached block, in no particular order.
  std::vector<std::pair<BlockHash, int32_t>> cached_entries() const;
  // The cached hashes, for other threads (see PrefixIndex).
  const PrefixIndex& index() const { return index_; }
  // Free queue, front (next to be reused) to back.
  std::vector<int32_t> free_queue_order() const { return free_queue_.to_vector(); }

 private:
  struct Block {
    int32_t ref_count = 0;
    bool is_cached = false;
    BlockHash hash;    // valid when is_cached
    BlockHash parent;  // valid when is_cached
  };

  void evict(int32_t block_id);

  int32_t num_blocks_;
  int32_t block_size_;
  std::vector<Block> blocks_;           // [num_blocks]
  std::vector<int32_t> cached_tokens_;  // [num_blocks * block_size], valid where is_cached
  FreeBlockQueue free_queue_;
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> cached_;
  PrefixIndex index_;  // the keys of cached_, readable from any thread
};

}  // namespace strata
