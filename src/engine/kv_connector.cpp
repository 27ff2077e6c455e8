#include "engine/kv_connector.h"

namespace strata {

int64_t insert_connector_kv(KvConnector& connector, const KvLoadReady& ready,
                            std::span<const int32_t> prompt_tokens,
                            std::span<const BlockHash> block_hashes, KvCacheManager& kv_cache,
                            KvStorage& storage) {
  const int32_t bs = kv_cache.block_size();
  // The pool may have changed while loading: load what continues its hit
  // now, and hold that hit so taking fresh blocks cannot evict it.
  const PrefixHit hit = kv_cache.find_prefix(prompt_tokens, block_hashes);
  const int64_t first_block = hit.num_tokens / bs;
  const int64_t num_blocks = ready.num_tokens / bs - first_block;
  kv_cache.hold_blocks(hit.block_ids);
  std::vector<int32_t> ids;
  int64_t n = 0;
  if (num_blocks > 0 && kv_cache.take_blocks(static_cast<int32_t>(num_blocks), &ids)) {
    n = connector.load_blocks(ready.load_id, first_block, ids, storage);
    const std::span<const int32_t> all(ids);
    kv_cache.insert_computed_blocks(all.first(static_cast<size_t>(n)), prompt_tokens, block_hashes,
                                    first_block);
    kv_cache.release_blocks(all.subspan(static_cast<size_t>(n)));
  } else {
    connector.cancel_load(ready.load_id);
  }
  // Tail first, so the head of the prefix is the last to be evicted.
  const std::vector<int32_t> hit_tail_first(hit.block_ids.rbegin(), hit.block_ids.rend());
  kv_cache.release_blocks(hit_tail_first);
  return n * bs;
}

}  // namespace strata
