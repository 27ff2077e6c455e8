// DisaggMetrics: one worker's KV transfer figures (prefill and decode roles),
// exported as Prometheus text next to the engine's own /metrics:
//   strata:kv_transfer_bytes_total{direction="sent|received"}
//   strata:kv_transfer_chunks_total{result="sent|verified|rejected"}
//   strata:kv_transfer_seconds (histogram: a decode worker's ask -> last chunk)
//   strata:prefill_decisions_total{where="local|remote"}
//   strata:kv_transfer_faults_total{kind="unreachable|closed|deadline|corrupt|refused"}
//   strata:kv_transfer_recomputed_tokens_total (asked remotely, computed here after a fault)
//   strata:kv_transfers_active (gauge: open transfers on this worker)
//   strata:requests_migrated_total{direction="out|in"} (docs/disagg.md "Migration")
//   strata:kv_transfer_asks_served_total (asks this worker's channel answered, to the end)
//   strata:kv_transfer_read_seconds_total (a decode worker's time reading chunk
//     payloads off the socket: received bytes / this = the channel's bandwidth)
// Thread-safe (one mutex; a few records per chunk).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "engine/metrics.h"

namespace strata::disagg {

enum class TransferFault { kUnreachable, kClosed, kDeadline, kCorrupt, kRefused };
const char* transfer_fault_name(TransferFault fault);

struct DisaggMetricsSnapshot {
  int64_t bytes_sent = 0;
  int64_t bytes_received = 0;
  int64_t chunks_sent = 0;
  int64_t chunks_verified = 0;
  int64_t chunks_rejected = 0;
  int64_t local_decisions = 0;
  int64_t remote_decisions = 0;
  int64_t recomputed_tokens = 0;
  int64_t transfers_active = 0;
  int64_t asks_served = 0;  // connections of the transfer server, closed
  int64_t migrated_out = 0;
  int64_t migrated_in = 0;
  double read_seconds = 0.0;
  std::map<std::string, int64_t> faults;  // by transfer_fault_name
  HistogramSnapshot transfer_seconds;
};

class DisaggMetrics {
 public:
  DisaggMetrics();

  void add_sent(int64_t bytes);  // one chunk
  void add_received(int64_t bytes, bool verified);
  void add_read_seconds(double seconds);
  void add_decision(bool remote);
  void add_fault(TransferFault fault, int64_t recomputed_tokens);
  void observe_transfer(double seconds);
  void add_active(int64_t delta);
  void add_ask_served();
  void add_migration(bool out);

  DisaggMetricsSnapshot snapshot() const;
  std::string to_prometheus_text(const std::string& model_name) const;

 private:
  mutable std::mutex mu_;
  DisaggMetricsSnapshot s_;
};

}  // namespace strata::disagg
