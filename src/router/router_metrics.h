// RouterMetrics: the router's own counters and its added-latency histogram,
// and the Prometheus text of /metrics (with each replica's counters from
// ReplicaSet).
//
// Added latency is the time a request spends in the router before it is
// sent to a replica: parsing, tokenizing, hashing, probing and choosing
// (what a client would not pay talking to the replica directly; the
// pass-through of the response afterwards is a copy per event).
//
// Thread-safe: every field is atomic.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "router/replica_set.h"

namespace strata::router {

class LatencyHistogram {
 public:
  // Upper bounds in seconds (Prometheus `le`), +Inf implied.
  static constexpr std::array<double, 19> kBounds = {
      0.0001, 0.00025, 0.0005, 0.00075, 0.001, 0.0015, 0.002, 0.003, 0.005, 0.0075,
      0.01,   0.025,   0.05,   0.1,     0.25,  0.5,    1.0,   2.5,   5.0};
  void observe(double seconds);
  // Appends `name`_bucket/_sum/_count lines (HELP and TYPE included).
  void append_prometheus(const std::string& name, const std::string& help, std::string* out) const;
  int64_t count() const { return count_.load(); }

 private:
  std::array<std::atomic<int64_t>, kBounds.size() + 1> buckets_{};  // last: +Inf
  std::atomic<int64_t> count_{0};
  std::atomic<int64_t> sum_ns_{0};
};

struct RouterMetrics {
  // Generation requests by how they ended at the router.
  std::atomic<int64_t> num_requests{0};
  std::atomic<int64_t> num_failed{0};              // every try failed before the first byte
  std::atomic<int64_t> num_failed_mid_stream{0};   // ended with the router's error event
  std::atomic<int64_t> num_no_replica{0};          // no replica available: 503
  std::atomic<int64_t> num_client_disconnects{0};  // upstream cancelled
  // Running requests a draining worker handed over, continued elsewhere
  // (docs/disagg.md "Migration").
  std::atomic<int64_t> num_migrations{0};
  std::atomic<int64_t> num_probes{0};
  std::atomic<int64_t> num_probe_failures{0};  // timed out, refused or malformed
  std::atomic<int64_t> num_reloads{0};
  LatencyHistogram added_latency;

  std::string to_prometheus_text(const std::vector<std::shared_ptr<Replica>>& replicas) const;
};

}  // namespace strata::router
