#include "kv/block_pool.h"

#include <algorithm>
#include <cassert>

namespace strata {

BlockPool::BlockPool(int32_t num_blocks, int32_t block_size)
    : num_blocks_(num_blocks),
      block_size_(block_size),
      blocks_(num_blocks),
      cached_tokens_(static_cast<size_t>(num_blocks) * block_size),
      free_queue_(num_blocks) {
  assert(num_blocks >= 1 && block_size >= 1);
}

double BlockPool::usage() const {
  return static_cast<double>(num_blocks_ - num_free_blocks()) / num_blocks_;
}

void BlockPool::evict(int32_t block_id) {
  Block& b = blocks_[block_id];
  if (!b.is_cached) return;
  auto it = cached_.find(b.hash);
  assert(it != cached_.end() && it->second == block_id);
  cached_.erase(it);
  index_.erase(b.hash);
  b.is_cached = false;
}

void BlockPool::allocate(int32_t n, std::vector<int32_t>* out) {
  assert(n <= num_free_blocks());
  for (int32_t i = 0; i < n; ++i) {
    const int32_t id = free_queue_.pop_front();
    evict(id);
    blocks_[id].ref_count = 1;
    out->push_back(id);
  }
}

void BlockPool::touch(std::span<const int32_t> block_ids) {
  for (int32_t id : block_ids) {
    Block& b = blocks_[id];
    if (b.ref_count == 0) free_queue_.remove(id);
    ++b.ref_count;
  }
}

void BlockPool::release(std::span<const int32_t> block_ids) {
  for (int32_t id : block_ids) {
    Block& b = blocks_[id];
    assert(b.ref_count > 0);
    if (--b.ref_count == 0) free_queue_.push_back(id);
  }
}

std::optional<int32_t> BlockPool::lookup(const BlockHash& hash, const BlockHash& parent,
                                         std::span<const int32_t> tokens) const {
  auto it = cached_.find(hash);
  if (it == cached_.end()) return std::nullopt;
  const int32_t id = it->second;
  if (blocks_[id].parent != parent) return std::nullopt;
  std::span<const int32_t> stored = tokens_of(id);
  if (!std::equal(stored.begin(), stored.end(), tokens.begin(), tokens.end())) return std::nullopt;
  return id;
}

bool BlockPool::cache(int32_t block_id, const BlockHash& hash, const BlockHash& parent,
                      std::span<const int32_t> tokens) {
  assert(static_cast<int32_t>(tokens.size()) == block_size_);
  Block& b = blocks_[block_id];
  assert(b.ref_count > 0 && !b.is_cached);
  if (!cached_.emplace(hash, block_id).second) return false;
  index_.insert(hash);
  b.is_cached = true;
  b.hash = hash;
  b.parent = parent;
  std::copy(tokens.begin(), tokens.end(),
            cached_tokens_.begin() + static_cast<size_t>(block_id) * block_size_);
  return true;
}

std::span<const int32_t> BlockPool::tokens_of(int32_t block_id) const {
  return {cached_tokens_.data() + static_cast<size_t>(block_id) * block_size_,
          static_cast<size_t>(block_size_)};
}

std::vector<std::pair<BlockHash, int32_t>> BlockPool::cached_entries() const {
  return {cached_.begin(), cached_.end()};
}

}  // namespace strata
