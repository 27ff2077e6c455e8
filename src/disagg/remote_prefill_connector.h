// RemotePrefillConnector: a decode worker's KvConnector. For a prompt worth
// it (prefill_decision.h), it asks a prefill worker, over the KV transfer
// channel (kv_transfer_protocol.h), for the KV of *these tokens* up to the
// prompt's last chunk boundary, and holds the request in the engine's
// `loading` state while the chunks stream in. Each chunk is verified as it
// arrives - chunk index in order, key == the key this worker computes from
// its own block hashes and model fingerprint, token count, payload size,
// header and payload checksums - and the load is ready when the reply ends,
// the prefill worker fails (connection refused or lost, a corrupt chunk) or
// the deadline (from measured rates) passes. Whatever verified leading run
// arrived is written into the pool as prefix-cache blocks (load_blocks); the
// engine computes the rest. A fault therefore costs a recompute, never an
// error or a wrong token.
//
// Nothing is leased and nothing can leak: the decode worker takes pool
// blocks only when it writes verified chunks (insert_connector_kv), and a
// transfer is one TCP connection, closed on every end (cancel_load closes
// it, and the prefill worker then aborts its request).
//
// Peers (--prefill-peer HOST:PORT, repeatable): the least busy one not in
// back-off; a peer that failed is skipped for a back-off that doubles per
// consecutive failure (0.25 s .. 5 s), so a dead prefill worker costs one
// failed connect per back-off, and a restarted one is used again.
//
// Migration: a load whose query names a peer (a migrated request's sender,
// which holds its KV) goes to that peer, always remote and outside the
// back-off (the KV exists nowhere else); it is verified the same way.
//
// Engine thread for the KvConnector calls; one I/O thread of its own runs
// the transfers and calls the wakeup.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "disagg/disagg_metrics.h"
#include "disagg/prefill_decision.h"
#include "engine/kv_connector.h"
#include "engine/metrics.h"
#include "kvtier/chunk_key.h"
#include "kvtier/kv_chunk.h"
#include "model/model_weights.h"
#include "util/status.h"

namespace strata::disagg {

struct RemotePrefillOptions {
  std::vector<std::string> peers;  // HOST:PORT of prefill workers' KV transfer channels
  RemotePrefillPolicy policy = RemotePrefillPolicy::kAuto;
  int32_t chunk_tokens = 256;  // as the prefill workers' --kv-chunk-tokens
  // The deadline never goes below this (a loopback round trip and a step of
  // a busy prefill worker).
  double min_deadline_s = 0.5;
  // Migration (docs/disagg.md): a decode worker without prefill peers still
  // loads migrated requests' KV from the worker that ran them (the load's
  // KvLoadQuery::peer); other prompts are then all computed locally.
  bool allow_no_peers = false;
};

class RemotePrefillConnector final : public KvConnector {
 public:
  // `engine_metrics` (the engine's: its measured prefill rate) and `metrics`
  // may be null.
  static Result<std::unique_ptr<RemotePrefillConnector>> create(const ModelWeights& weights,
                                                                int32_t block_size,
                                                                const RemotePrefillOptions& options,
                                                                const Metrics* engine_metrics,
                                                                DisaggMetrics* metrics);
  ~RemotePrefillConnector() override;

  void set_wakeup(std::function<void()> wakeup) override;
  int64_t start_load(const KvLoadQuery& query) override;
  void cancel_load(uint64_t load_id) override;
  std::vector<KvLoadReady> poll_loads() override;
  int64_t load_blocks(uint64_t load_id, int64_t first_block, std::span<const int32_t> block_ids,
                      KvStorage& storage) override;
  void save(const KvSaveRequest&, KvStorage&) override {}
  void request_finished(RequestId) override {}
  void flush() override {}

  const ModelFingerprint& fingerprint() const { return fingerprint_; }

  class Impl;  // the I/O side

 private:
  struct Load {
    int32_t first_chunk = 0;
    int64_t num_remote_tokens = 0;      // asked for beyond the pool's hit
    std::vector<KvChunkHandle> chunks;  // verified, chunks first_chunk, first_chunk + 1, ...
  };

  RemotePrefillConnector(const ModelFingerprint& fingerprint, int32_t block_size,
                         size_t chunk_payload_bytes, const RemotePrefillOptions& options,
                         const Metrics* engine_metrics, DisaggMetrics* metrics);

  ModelFingerprint fingerprint_;
  int32_t block_size_;
  int32_t chunk_tokens_;
  int32_t blocks_per_chunk_;
  size_t chunk_payload_bytes_;
  RemotePrefillOptions options_;
  const Metrics* engine_metrics_;
  DisaggMetrics* metrics_;
  std::unordered_map<uint64_t, Load> loads_;  // engine thread only
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::disagg
