// TieredKvConnector: the KvConnector over the tiered KV cache (KvTierManager:
// host RAM, local disk, Redis).
//
// KV moves in chunks of chunk_tokens tokens (whole blocks), each keyed by the
// model fingerprint and the chained hash of the chunk's last block
// (kvtier/chunk_key.h), so a chunk can only ever load into the same model,
// layout and prefix.
// - Load: start_load() asks for the chunks that follow the pool's own hit, up
//   to the last whole chunk before the prompt's last token; a KvLoader thread
//   fetches the longest run of them (tier by tier) while the engine steps.
//   poll_loads() checks each chunk (key, token count, payload size) and
//   reports the run; load_blocks() scatters it into the engine's blocks. A
//   RAM-only cache that misses the first chunk answers 0 at once.
// - Save: after each step, every chunk a request completed that it did not
//   get from the pool or a tier is copied out of KvStorage and handed to
//   KvTierManager::put_async, which never blocks the step.
// Records the tiers' hits as prompt tokens cached per tier, the load times,
// and exports the tiers' own counters through Metrics (when given).
//
// Model parallelism (weights.group() set; this is rank 0's connector): each
// rank keeps its own slice of every chunk, under keys that name the layout
// and the rank, in its own disk subdirectory (slice_tier_options). This
// connector decides every load and save and tells the other ranks in order
// with the steps (ControlKind::kKvTier, engine/kv_slice_worker.h), so every
// rank loads or saves the same chunks; load_blocks() then keeps only the
// run of blocks EVERY rank wrote (the minimum of their answers, under the
// group's exchange deadline), so a block enters the prefix cache only when
// all its slices are there, and otherwise every rank computes it.
//
// Owns the KvTierManager and the loader. Engine thread only (the loader
// calls the wakeup from its thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "engine/kv_connector.h"
#include "engine/kv_loader.h"
#include "engine/metrics.h"
#include "kvtier/chunk_key.h"
#include "kvtier/kv_tier_manager.h"
#include "model/model_weights.h"
#include "parallel/parallel_layout.h"
#include "sched/clock.h"
#include "util/status.h"

namespace strata {

class ProcessGroup;
struct KvSliceMessage;

// The tier options of `layout.rank`'s slice: under model parallelism the
// disk tier lives in its own subdirectory, `layout.key()` ("tp2.pp1.r0"),
// which one process's disk tier (its two-hex-char subdirectories) never
// reads; `options` as they are otherwise.
KvTierOptions slice_tier_options(const KvTierOptions& options, const ParallelLayout& layout);

class TieredKvConnector final : public KvConnector {
 public:
  // The tiers `options` configures, or `tiers` when given (tests inject
  // faulty ones); options.chunk_tokens is the chunk size either way.
  // `metrics` and `clock` may be null.
  static Result<std::unique_ptr<TieredKvConnector>> create(const ModelWeights& weights,
                                                           int32_t block_size,
                                                           const KvTierOptions& options,
                                                           std::unique_ptr<KvTierManager> tiers,
                                                           Metrics* metrics, const Clock* clock);
  ~TieredKvConnector() override;

  void set_wakeup(std::function<void()> wakeup) override { wakeup_ = std::move(wakeup); }
  int64_t start_load(const KvLoadQuery& query) override;
  void cancel_load(uint64_t load_id) override;
  std::vector<KvLoadReady> poll_loads() override;
  int64_t load_blocks(uint64_t load_id, int64_t first_block, std::span<const int32_t> block_ids,
                      KvStorage& storage) override;
  void save(const KvSaveRequest& request, KvStorage& storage) override;
  void request_finished(RequestId request_id) override { num_saved_chunks_.erase(request_id); }
  // Under a group, waits for every rank's stores too.
  void flush() override;
  // Per tier, the leading run of chunks it holds (a tier that is bypassed
  // after a fault reports 0, unavailable).
  std::vector<KvSourceProbe> probe(std::span<const BlockHash> block_hashes) override;

  KvTierManager& tiers() { return *tiers_; }
  int32_t chunk_tokens() const { return chunk_tokens_; }

 private:
  struct Load {
    int64_t first_chunk = 0;     // chunk index of keys[0]
    std::vector<ChunkKey> keys;  // chunks first_chunk, first_chunk + 1, ...
    int64_t start_ns = 0;
    KvTierManager::Loaded found;  // after poll_loads: the usable run only
  };

  TieredKvConnector(std::unique_ptr<KvTierManager> tiers, const ModelFingerprint& fingerprint,
                    int32_t block_size, int32_t chunk_tokens, size_t chunk_payload_bytes,
                    Metrics* metrics, const Clock* clock);
  ChunkKey chunk_key(std::span<const BlockHash> block_hashes, int64_t chunk) const;
  // Model parallelism: sends `m` to every other rank; false when the group
  // failed (the process is winding down: nothing loads).
  bool tell_workers(const KvSliceMessage& m);
  // The smallest of every worker's int64 answer and `own`; 0 when the group
  // failed.
  int64_t min_over_workers(int64_t own, const char* what);

  std::unique_ptr<KvTierManager> tiers_;
  std::unique_ptr<KvLoader> loader_;  // borrows tiers_; destroyed first
  ProcessGroup* group_ = nullptr;     // null: one process
  ParallelLayout layout_;             // this rank's (rank 0's) under a group
  ModelFingerprint fingerprint_;
  int32_t block_size_;
  int32_t chunk_tokens_;
  int32_t blocks_per_chunk_;
  size_t chunk_payload_bytes_;
  Metrics* metrics_;
  SteadyClock steady_clock_;
  const Clock* clock_;
  std::function<void()> wakeup_;
  std::unordered_map<uint64_t, Load> loads_;
  // Chunks [0, n) of a request are stored (or came from the pool or a tier).
  std::unordered_map<RequestId, int64_t> num_saved_chunks_;
};

}  // namespace strata
