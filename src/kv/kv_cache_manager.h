// KvCacheManager: block tables per sequence and automatic prefix caching on
// top of a BlockPool.
//
// A sequence (a request) is named by its caller's id (the scheduler's
// RequestId) and described by its tokens and their chained block hashes
// (kv/block_hash.h), which the caller keeps and passes in: the manager never
// hashes and never invents ids. Protocol for one sequence:
//   1. find_prefix(tokens, hashes)  read-only query: the longest run of
//      cached full blocks that starts the sequence.
//   2. can_allocate / allocate(id, hit, num_tokens)  query, then commit:
//      make the block table cover `num_tokens` tokens, reviving the hit
//      blocks first. "Not enough blocks" is a false return, not an error,
//      and allocate() changes nothing when it returns false.
//   3. commit_computed(id, tokens, hashes, num_computed_tokens)  after the
//      runner wrote K/V: blocks that became full are entered into the prefix
//      cache (only now, so a hit never points at unwritten K/V).
//   4. free(id) on preemption (blocks released tail first; cached ones stay
//      findable, so the recompute re-hits them cheaply), or remove(id) when
//      the sequence is done for good.
// KV computed outside the pool (a KV tier, a prefill worker) enters it without
// any sequence: the caller holds the prefix hit it extends (hold_blocks), so
// no allocation evicts it meanwhile, takes fresh blocks (take_blocks), writes
// their K/V, then insert_computed_blocks() caches them (or release_blocks()
// gives them back) and releases the hit. They become free cached blocks that
// the next find_prefix() of that prefix hits.
// A sequence's block table always covers at least its allocated tokens and
// block i of it holds tokens [i * block_size, (i + 1) * block_size).
//
// Owns its BlockPool. Single-threaded (the engine thread).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "kv/block_pool.h"
#include "util/status.h"

namespace strata {

// Filled by the engine from EngineOptions, which owns the defaults; the
// zero sizes fail validate() until set.
struct KvCacheOptions {
  // Tokens per block (--block-size). 1..1024.
  int32_t block_size = 0;
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

  bool is_prefix_caching_enabled() const { return options_.enable_prefix_caching; }

  // The longest cached prefix of `tokens` in whole blocks, never covering
  // the last token (at least one token must be computed to get logits).
  // `block_hashes` are the chained keys of tokens' full blocks (at least the
  // first (tokens.size() - 1) / block_size of them). Empty when prefix
  // caching is off. No state change.
  PrefixHit find_prefix(std::span<const int32_t> tokens,
                        std::span<const BlockHash> block_hashes) const;

  // Whether allocate(id, hit, num_tokens) would succeed now.
  bool can_allocate(SeqId id, const PrefixHit& hit, int64_t num_tokens) const;
  // Grows id's block table to cover `num_tokens` tokens: the hit's blocks
  // (only when the table is empty) then fresh ones. Returns false, changing
  // nothing, when the pool is short. Creates the sequence on first use.
  bool allocate(SeqId id, const PrefixHit& hit, int64_t num_tokens);

  // Caches id's blocks that are full within the first `num_computed_tokens`
  // of `tokens` (whose K/V is now written), under their `block_hashes`.
  void commit_computed(SeqId id, std::span<const int32_t> tokens,
                       std::span<const BlockHash> block_hashes, int64_t num_computed_tokens);

  // Appends `n` fresh blocks to `out`, held by the caller (not by any
  // sequence) until insert_computed_blocks() or release_blocks(). Returns
  // false, taking nothing, when fewer than n are free.
  bool take_blocks(int32_t n, std::vector<int32_t>* out);
  // Enters blocks the caller took and wrote into the prefix cache: block_ids[j]
  // holds logical block first_block + j of `tokens`, keyed by
  // block_hashes[first_block + j]; the caller's hold is dropped, so they are
  // free and cached (a block whose key is already cached is just freed).
  // Precondition: prefix caching is on and every such block is full.
  void insert_computed_blocks(std::span<const int32_t> block_ids, std::span<const int32_t> tokens,
                              std::span<const BlockHash> block_hashes, int64_t first_block);
  // Gives blocks the caller took or held back (uncached ones stay uncached).
  void release_blocks(std::span<const int32_t> block_ids);
  // Holds blocks for the caller (one more reference each; a free cached
  // block leaves the free queue), so take_blocks() cannot evict a prefix hit
  // the caller is about to extend. Undo with release_blocks().
  void hold_blocks(std::span<const int32_t> block_ids);

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
    int32_t num_committed_blocks = 0;  // table prefix already cached (or hit)
  };

  // Caches `block_id`, holding logical block i of `tokens`.
  void cache_block(int32_t block_id, std::span<const int32_t> tokens,
                   std::span<const BlockHash> block_hashes, int64_t i);
  // Blocks allocate() would take from the free queue.
  int64_t num_blocks_to_take(const Seq* seq, const PrefixHit& hit, int64_t num_tokens) const;

  KvCacheOptions options_;
  BlockPool pool_;
  std::unordered_map<SeqId, Seq> seqs_;
  KvCacheStats stats_;
};

}  // namespace strata
