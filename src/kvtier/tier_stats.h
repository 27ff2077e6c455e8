// TierStats: one KV tier's counters (a snapshot copy), and TierStatsRecorder,
// the thread-safe accumulator every tier keeps.
//
// Counters are monotone; stored_chunks/stored_bytes are gauges (what the tier
// holds now; a remote tier that cannot know reports what it is not: 0).
// Latency histograms use fixed upper bounds in seconds (100 us .. 10 s) with
// the same shape as the engine's HistogramSnapshot (bounds, per-bucket counts
// plus an overflow bucket, sum, count), so the engine exports them as is.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <vector>

namespace strata {

struct LatencyHistogram {
  std::vector<double> bounds;   // ascending upper bounds, seconds
  std::vector<int64_t> counts;  // [bounds.size() + 1]: counts[i] <= bounds[i], last: above all
  double sum = 0.0;             // seconds
  int64_t count = 0;

  // An empty histogram with the tier latency bounds.
  static LatencyHistogram make_tier_latency();
  void observe(double seconds);
};

struct TierStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t bytes_read = 0;     // payload bytes returned by get
  int64_t bytes_written = 0;  // payload bytes stored by put
  int64_t evictions = 0;
  int64_t errors = 0;          // faults: I/O errors, timeouts, corrupt values
  int64_t dropped_stores = 0;  // stores never attempted (queue full, tier bypassed)
  int64_t stored_chunks = 0;   // gauge
  int64_t stored_bytes = 0;    // gauge: bytes held (disk: file bytes, headers included)
  LatencyHistogram get_latency = LatencyHistogram::make_tier_latency();
  LatencyHistogram put_latency = LatencyHistogram::make_tier_latency();
};

// Seconds since construction (steady clock), for the latency histograms.
class TierTimer {
 public:
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// Thread-safe accumulator (one mutex, held for a few additions).
class TierStatsRecorder {
 public:
  void record_hit(int64_t payload_bytes, double seconds);
  void record_miss(double seconds);
  void record_put(int64_t payload_bytes, double seconds);
  void record_error();
  void record_evictions(int64_t n);
  void record_dropped_stores(int64_t n);
  void set_stored(int64_t num_chunks, int64_t num_bytes);
  TierStats snapshot() const;

 private:
  mutable std::mutex mu_;
  TierStats stats_;
};

}  // namespace strata
