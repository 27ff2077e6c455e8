// The loop every rank but 0 of a model-parallel group runs instead of a
// command: it waits for rank 0's control messages and runs each broadcast
// forward batch on its shard (parallel/process_group.h, ModelRunner).
//
// kHello (rank 0 created a runner) sizes this rank's KV pool to the same
// blocks and builds its runner; kForward runs one batch; kStop returns OK.
// A batch that does not decode or validate here ends the group (rank 0
// validated it, so the ranks disagree about the model: nothing can go on).
// kKvTier goes to `on_kv_tier` with this rank's KV pool (the tiered cache's
// worker half lives above the runtime: engine/kv_slice_worker.h); without
// one, such a message ends the group.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "model/model_weights.h"
#include "runtime/kv_storage.h"
#include "util/status.h"

namespace strata {

using KvTierMessageHandler = std::function<void(std::span<const uint8_t> payload, KvStorage& kv)>;

// `weights` must be a shard (weights.group() set, rank != 0); `num_threads`
// kernel threads (0: every hardware thread).
Status run_model_worker(const ModelWeights& weights, int num_threads,
                        const KvTierMessageHandler& on_kv_tier = nullptr);

}  // namespace strata
