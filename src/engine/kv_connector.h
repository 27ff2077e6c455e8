// KvConnector: the bridge between the engine and KV that lives outside its
// block pool: the tiered cache (RAM, disk, Redis) today, a prefill worker
// tomorrow. vLLM v1's KVConnectorBase_V1 is the anchor; like it, a connector
// has a scheduler side and a worker side:
//
//   admission   start_load(query) -> how many prompt tokens beyond the
//               pool's own prefix hit this connector may supply. 0: admit
//               the request now. > 0: an asynchronous lookup started; the
//               engine holds the request (its `loading` state) while others
//               keep stepping.
//   ready       poll_loads() -> loads whose lookup finished, each with the
//               number of leading prompt tokens the connector now holds.
//   load        load_blocks(id, first_block, block_ids, storage): write
//               that KV into blocks the engine took from the pool; the
//               engine then enters them into the prefix cache
//               (KvCacheManager::insert_computed_blocks) and admits the
//               request, whose prefix lookup hits them.
//   after step  save(request, storage): a request's KV computed so far; the
//               connector keeps (stores, publishes) what it has not yet.
//
// Everything is named by content: tokens and their chained block hashes
// (kv/block_hash.h), never another process's block ids, so nothing is
// leased. A failed, partial or corrupt load only means those tokens are
// computed: the output is the same either way.
//
// Called on the engine thread only, except the wakeup, which an
// implementation calls from its own thread when a load becomes ready (the
// engine loop may be asleep). Not required to be thread-safe otherwise.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/prefix_probe.h"
#include "kv/block_hash.h"
#include "kv/kv_cache_manager.h"
#include "runtime/kv_storage.h"
#include "sched/request.h"

namespace strata {

// What the engine asks about a request at admission.
struct KvLoadQuery {
  uint64_t load_id = 0;  // engine-chosen, unique among live loads (the stream id)
  std::span<const int32_t> prompt_tokens;
  // Chained keys of the prompt's full blocks.
  std::span<const BlockHash> block_hashes;
  // Leading prompt tokens already in the pool (its prefix hit), whole blocks.
  int64_t num_pool_tokens = 0;
  // The request's cache salt (folded into block_hashes): a connector that
  // has another process compute the prompt must hash it the same way.
  std::string_view cache_salt;
  // A migrated request: HOST:PORT of the worker that ran it, which holds
  // its KV (ResumeState::kv_peer). Empty: the connector's own choice.
  std::string_view peer;
};

// A load whose lookup finished.
struct KvLoadReady {
  uint64_t load_id = 0;
  // The connector holds KV for prompt tokens [0, num_tokens) now, as far as
  // it answers for them (at least from the query's num_pool_tokens on); a
  // multiple of the block size, 0 when it found nothing.
  int64_t num_tokens = 0;
};

// One request's KV after a step.
struct KvSaveRequest {
  RequestId request_id = 0;
  std::span<const int32_t> tokens;          // prompt + output so far
  std::span<const BlockHash> block_hashes;  // chained keys of tokens' full blocks
  std::span<const int32_t> block_table;     // logical block -> physical block
  // K/V is written for tokens [0, num_computed_tokens).
  int64_t num_computed_tokens = 0;
  // This was the request's first step: tokens [0, num_cached_tokens) came
  // from the pool's prefix cache (or an earlier load), not from this request.
  bool is_first_step = false;
  int64_t num_cached_tokens = 0;
};

class KvConnector {
 public:
  virtual ~KvConnector() = default;

  // Called (from any thread) whenever a load becomes ready. Set before the
  // first start_load().
  virtual void set_wakeup(std::function<void()> wakeup) = 0;

  // Scheduler side. See the header comment. Never blocks on I/O.
  virtual int64_t start_load(const KvLoadQuery& query) = 0;
  // Forgets load `load_id` (its request was aborted); it is never reported.
  virtual void cancel_load(uint64_t load_id) = 0;
  // Loads ready since the last call, in any order. Never blocks on I/O.
  virtual std::vector<KvLoadReady> poll_loads() = 0;

  // Worker side. Writes the KV of the prompt's logical blocks [first_block,
  // first_block + block_ids.size()) of ready load `load_id` into block_ids
  // of `storage`; returns how many leading blocks it wrote (fewer when data
  // fails its checks). Ends the load either way.
  virtual int64_t load_blocks(uint64_t load_id, int64_t first_block,
                              std::span<const int32_t> block_ids, KvStorage& storage) = 0;
  // Hands over a request's KV after a step (see KvSaveRequest).
  virtual void save(const KvSaveRequest& request, KvStorage& storage) = 0;
  // The request is done: drop what save() remembered of it.
  virtual void request_finished(RequestId request_id) = 0;

  // Waits until everything saved so far reached its destination or was
  // dropped (tests, shutdown).
  virtual void flush() = 0;

  // How many leading tokens of the chain each of this connector's sources
  // holds now (a router's probe). Thread-safe, unlike the rest; may wait on
  // I/O up to the sources' own timeouts. None by default.
  virtual std::vector<KvSourceProbe> probe(std::span<const BlockHash> block_hashes) { return {}; }
};

// The engine's half of a ready load: takes fresh blocks for the prompt's
// blocks from the pool's current prefix hit up to ready.num_tokens, lets the
// connector write them, enters what it wrote into the prefix cache (the rest
// goes back) and ends the load. Returns how many prompt tokens it added.
int64_t insert_connector_kv(KvConnector& connector, const KvLoadReady& ready,
                            std::span<const int32_t> prompt_tokens,
                            std::span<const BlockHash> block_hashes, KvCacheManager& kv_cache,
                            KvStorage& storage);

}  // namespace strata
