// KvCacheManager: block tables per sequence and automatic prefix caching on
// top of a BlockPool.
//
// Protocol for one sequence (a request), identified by a caller-chosen id:
//   1. find_prefix(id, tokens, salt)  query: the longest run of cached full
//      blocks that starts the sequence. Never changes the pool.
//   2. can_allocate / allocate(id, hit, num_tokens)  query, then commit:
//      make the block table cover `num_tokens` tokens, reviving the hit
//      blocks first. "Not enough blocks" is a false return, not an error,
//      and allocate() changes nothing when it returns false.
//   3. commit_computed(id, tokens, num_computed_tokens)  after the runner
//      wrote K/V: blocks that became full are hashed into the prefix cache
//      (only now, so a hit never points at unwritten K/V).
//   4. free(id) on preemption (blocks released tail first; the full-block
//      hashes are remembered, so the recompute re-hits them cheaply), or
//      remove(id) when the sequence is done for good.
// Each full block's hash is computed once per sequence and memoized.
// A sequence's block table always covers at least its allocated tokens and
// block i of it holds tokens [i * block_size, (i + 1) * block_size).
//
// Owns its BlockPool. Single-threaded (the engine thread).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "util/status.h"

namespace strata {

struct KvCacheOptions {
  // Tokens per block (--block-size). 1..1024; 16 is the default.
  int32_t block_size = 16;
  // Physical blocks in the pool. Derive it from the memory budget with
  // KvStorage::bytes_per_block (runtime/kv_storage.h), never from
  // max_model_len x max_num_seqs. >= 1.
  int32_t num_blocks = 0;
  // Share full blocks between sequences with equal prefixes (and salts).
  bool enable_prefix_caching = true;

  Status validate() const;
};

// The cached blocks that start a sequence, as find_prefix() found them.
struct PrefixHit {
  std::vector<int32_t> block_ids;  // logical block i -> physical block
  int64_t num_tokens = 0;          // block_ids.size() * block_size
};

// Counters for the metrics exporter; monotone over the manager's life.
struct KvCacheStats {
  int64_t prefix_query_tokens = 0;  // tokens of sequences admitted with a lookup
  int64_t prefix_hit_tokens = 0;    // of which served from the cache
};

class KvCacheManager {
 public:
  using SeqId = uint64_t;

  // Precondition: options.validate() is OK.
  explicit KvCacheManager(const KvCacheOptions& options);

  int32_t block_size() const { return pool_.block_size(); }
  int32_t num_blocks() const { return pool_.num_blocks(); }
  int32_t num_free_blocks() const { return pool_.num_free_blocks(); }
  // Fraction of blocks referenced by some sequence, in [0, 1].
  double usage() const { return pool_.usage(); }
  // Blocks needed to hold `num_tokens` tokens.
  int64_t blocks_for_tokens(int64_t num_tokens) const;

  // The longest cached prefix of `tokens` in whole blocks, never covering
  // the last token (at least one token must be computed to get logits).
  // `cache_salt` separates tenants; it must be the same on every call for a
  // given id. Empty when prefix caching is off or `id` already holds blocks.
  PrefixHit find_prefix(SeqId id, std::span<const int32_t> tokens, std::string_view cache_salt);

  // Whether allocate(id, hit, num_tokens) would succeed now.
  bool can_allocate(SeqId id, const PrefixHit& hit, int64_t num_tokens) const;
  // Grows id's block table to cover `num_tokens` tokens: the hit's blocks
  // (only when the table is empty) then fresh ones. Returns false, changing
  // nothing, when the pool is short. Creates the sequence on first use.
  bool allocate(SeqId id, const PrefixHit& hit, int64_t num_tokens);

  // Hashes and caches id's blocks that are full within the first
  // `num_computed_tokens` of `tokens` (whose K/V is now written).
  void commit_computed(SeqId id, std::span<const int32_t> tokens, int64_t num_computed_tokens);

  // Releases id's blocks, tail first; keeps its memoized hashes (preemption).
  void free(SeqId id);
  // free() and forget the sequence entirely (finished or aborted).
  void remove(SeqId id);

  // Accounts one admission's lookup for the prefix-cache metrics.
  void record_prefix_query(int64_t num_query_tokens, int64_t num_hit_tokens);
  const KvCacheStats& stats() const { return stats_; }

  // id's block table (empty if it holds no blocks).
  const std::vector<int32_t>& block_table(SeqId id) const;
  // Ids of sequences that currently hold blocks.
  std::vector<SeqId> seq_ids() const;
  const BlockPool& pool() const { return pool_; }

 private:
  struct Seq {
    std::vector<int32_t> block_table;
    std::vector<BlockHash> block_hashes;  // memo: key of full block i
    int32_t num_committed_blocks = 0;     // table prefix already cached (or hit)
    std::string cache_salt;
  };

  // Extends seq.block_hashes to cover the first `num_full_blocks` blocks.
  void hash_blocks(Seq& seq, std::span<const int32_t> tokens, int64_t num_full_blocks) const;
  // Blocks allocate() would take from the free queue.
  int64_t num_blocks_to_take(const Seq* seq, const PrefixHit& hit, int64_t num_tokens) const;

  KvCacheOptions options_;
  BlockPool pool_;
  std::unordered_map<SeqId, Seq> seqs_;
  KvCacheStats stats_;
};

}  // namespace strata
