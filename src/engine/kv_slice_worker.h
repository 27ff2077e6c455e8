// KvSliceWorker: the tiered KV cache's half on a rank other than 0 of a
// model-parallel group. Each rank keeps its own slice of every chunk (its KV
// heads under tensor parallelism, its layers under pipeline parallelism) in
// tiers of its own (a disk tier in its own subdirectory, keys that name the
// layout and the rank: kvtier/chunk_key.h). Rank 0's TieredKvConnector
// decides every load and save and tells the workers in order with the steps
// (engine/kv_slice_message.h); this mirrors them:
//   kLoad   submits the same chunks' keys (this rank's) to a KvLoader;
//   kWrite  waits for that lookup (bounded), writes the run into the blocks
//           rank 0 names and answers how many leading blocks it wrote; rank
//           0 keeps only the run every rank wrote (the minimum), so a block
//           enters the prefix cache only when every rank holds its slice;
//   kSave   copies the chunks' blocks out of this rank's pool and stores them.
// Tiers that cannot open here (a disk this rank cannot write) leave this
// rank with none: it answers 0 to every load, so every rank computes.
//
// Runs on the worker loop's thread (runtime/model_worker.h); the loader has
// its own. A message that does not decode ends the group.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>

#include "engine/kv_loader.h"
#include "engine/kv_slice_message.h"
#include "kvtier/chunk_key.h"
#include "kvtier/kv_tier_manager.h"
#include "model/model_weights.h"
#include "runtime/kv_storage.h"

namespace strata {

class KvSliceWorker {
 public:
  // `weights` is this rank's shard (weights.group() set); borrowed.
  explicit KvSliceWorker(const ModelWeights& weights);
  ~KvSliceWorker();

  // One kKvTier payload from rank 0, against this rank's pool.
  void handle(std::span<const uint8_t> payload, KvStorage& storage);

 private:
  struct Tiers;  // the open connector's state (null before kOpen, after kClose)
  void open(const KvSliceMessage& m);
  int64_t write(const KvSliceMessage& m, KvStorage& storage);
  void save(const KvSliceMessage& m, KvStorage& storage);

  const ModelWeights& weights_;
  std::unique_ptr<Tiers> tiers_;
};

}  // namespace strata
