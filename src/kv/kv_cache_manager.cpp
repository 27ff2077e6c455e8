#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <cassert>

namespace strata {

Status KvCacheOptions::validate() const {
  if (block_size < 1 || block_size > 1024) {
    return invalid_argument("kv cache: --block-size must be in [1, 1024], got " +
                            std::to_string(block_size));
  }
  if (num_blocks < 1) {
    return invalid_argument("kv cache: the pool has " + std::to_string(num_blocks) +
                            " blocks; raise --kv-cache-memory");
  }
  return Status::ok();
}

KvCacheManager::KvCacheManager(const KvCacheOptions& options)
    : options_(options), pool_(options.num_blocks, options.block_size) {
  assert(options.validate().is_ok());
}

int64_t KvCacheManager::blocks_for_tokens(int64_t num_tokens) const {
  return (num_tokens + block_size() - 1) / block_size();
}

PrefixHit KvCacheManager::find_prefix(std::span<const int32_t> tokens,
                                      std::span<const BlockHash> block_hashes) const {
  PrefixHit hit;
  if (!options_.enable_prefix_caching || tokens.empty()) return hit;
  const int64_t bs = block_size();
  const int64_t max_blocks = std::min<int64_t>((static_cast<int64_t>(tokens.size()) - 1) / bs,
                                               static_cast<int64_t>(block_hashes.size()));
  for (int64_t i = 0; i < max_blocks; ++i) {
    const BlockHash& parent = i == 0 ? root_block_hash() : block_hashes[i - 1];
    std::optional<int32_t> block =
        pool_.lookup(block_hashes[i], parent, tokens.subspan(i * bs, bs));
    if (!block) break;
    hit.block_ids.push_back(*block);
  }
  hit.num_tokens = static_cast<int64_t>(hit.block_ids.size()) * bs;
  return hit;
}

int64_t KvCacheManager::num_blocks_to_take(const Seq* seq, const PrefixHit& hit,
                                           int64_t num_tokens) const {
  const int64_t have = seq ? static_cast<int64_t>(seq->block_table.size()) : 0;
  const bool use_hit = have == 0;
  const int64_t num_hit = use_hit ? static_cast<int64_t>(hit.block_ids.size()) : 0;
  int64_t take = std::max<int64_t>(0, blocks_for_tokens(num_tokens) - have - num_hit);
  if (use_hit) {
    // Reviving a free cached block also takes it out of the free queue.
    for (int32_t b : hit.block_ids) take += pool_.is_free(b) ? 1 : 0;
  }
  return take;
}

bool KvCacheManager::can_allocate(SeqId id, const PrefixHit& hit, int64_t num_tokens) const {
  auto it = seqs_.find(id);
  return num_blocks_to_take(it == seqs_.end() ? nullptr : &it->second, hit, num_tokens) <=
         pool_.num_free_blocks();
}

bool KvCacheManager::allocate(SeqId id, const PrefixHit& hit, int64_t num_tokens) {
  if (!can_allocate(id, hit, num_tokens)) return false;
  Seq& seq = seqs_[id];
  if (seq.block_table.empty() && !hit.block_ids.empty()) {
    pool_.touch(hit.block_ids);
    seq.block_table = hit.block_ids;
    seq.num_committed_blocks = static_cast<int32_t>(hit.block_ids.size());
  }
  const int64_t missing =
      blocks_for_tokens(num_tokens) - static_cast<int64_t>(seq.block_table.size());
  if (missing > 0) pool_.allocate(static_cast<int32_t>(missing), &seq.block_table);
  return true;
}

void KvCacheManager::cache_block(int32_t block_id, std::span<const int32_t> tokens,
                                 std::span<const BlockHash> block_hashes, int64_t i) {
  const int64_t bs = block_size();
  assert(static_cast<int64_t>(block_hashes.size()) > i);
  assert(static_cast<int64_t>(tokens.size()) >= (i + 1) * bs);
  const BlockHash& parent = i == 0 ? root_block_hash() : block_hashes[i - 1];
  // A false return means an equal block is already cached; this copy
  // simply stays private to its holder.
  (void)pool_.cache(block_id, block_hashes[i], parent, tokens.subspan(i * bs, bs));
}

void KvCacheManager::commit_computed(SeqId id, std::span<const int32_t> tokens,
                                     std::span<const BlockHash> block_hashes,
                                     int64_t num_computed_tokens) {
  if (!options_.enable_prefix_caching) return;
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  Seq& seq = it->second;
  const int64_t num_full = std::min<int64_t>({num_computed_tokens / block_size(),
                                              static_cast<int64_t>(seq.block_table.size()),
                                              static_cast<int64_t>(block_hashes.size())});
  for (int64_t i = seq.num_committed_blocks; i < num_full; ++i) {
    cache_block(seq.block_table[i], tokens, block_hashes, i);
  }
  seq.num_committed_blocks = std::max(seq.num_committed_blocks, static_cast<int32_t>(num_full));
}

bool KvCacheManager::take_blocks(int32_t n, std::vector<int32_t>* out) {
  if (n < 0 || n > pool_.num_free_blocks()) return false;
  pool_.allocate(n, out);
  return true;
}

void KvCacheManager::insert_computed_blocks(std::span<const int32_t> block_ids,
                                            std::span<const int32_t> tokens,
                                            std::span<const BlockHash> block_hashes,
                                            int64_t first_block) {
  assert(options_.enable_prefix_caching);
  for (size_t j = 0; j < block_ids.size(); ++j) {
    cache_block(block_ids[j], tokens, block_hashes, first_block + static_cast<int64_t>(j));
  }
  // Tail first, as free() does: the run's head stays cached longest.
  std::vector<int32_t> tail_first(block_ids.rbegin(), block_ids.rend());
  pool_.release(tail_first);
}

void KvCacheManager::release_blocks(std::span<const int32_t> block_ids) {
  pool_.release(block_ids);
}

void KvCacheManager::hold_blocks(std::span<const int32_t> block_ids) {
  pool_.touch(block_ids);
}

void KvCacheManager::free(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  Seq& seq = it->second;
  std::vector<int32_t> tail_first(seq.block_table.rbegin(), seq.block_table.rend());
  pool_.release(tail_first);
  seq.block_table.clear();
  seq.num_committed_blocks = 0;
}

void KvCacheManager::remove(SeqId id) {
  free(id);
  seqs_.erase(id);
}

void KvCacheManager::record_prefix_query(int64_t num_query_tokens, int64_t num_hit_tokens) {
  stats_.prefix_query_tokens += num_query_tokens;
  stats_.prefix_hit_tokens += num_hit_tokens;
}

const std::vector<int32_t>& KvCacheManager::block_table(SeqId id) const {
  static const std::vector<int32_t> kEmpty;
  auto it = seqs_.find(id);
  return it == seqs_.end() ? kEmpty : it->second.block_table;
}

std::vector<KvCacheManager::SeqId> KvCacheManager::seq_ids() const {
  std::vector<SeqId> ids;
  for (const auto& [id, seq] : seqs_) {
    if (!seq.block_table.empty()) ids.push_back(id);
  }
  return ids;
}

}  // namespace strata
