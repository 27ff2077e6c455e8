#include "kvtier/tier_stats.h"

namespace strata {

LatencyHistogram LatencyHistogram::make_tier_latency() {
  LatencyHistogram h;
  // A RAM hit takes microseconds, a 5 MB disk read milliseconds, a Redis
  // round trip over a LAN milliseconds to a timeout.
  h.bounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
              0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};
  h.counts.assign(h.bounds.size() + 1, 0);
  return h;
}

void LatencyHistogram::observe(double seconds) {
  size_t i = 0;
  while (i < bounds.size() && seconds > bounds[i]) ++i;
  ++counts[i];
  sum += seconds;
  ++count;
}

void TierStatsRecorder::record_hit(int64_t payload_bytes, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.hits;
  stats_.bytes_read += payload_bytes;
  stats_.get_latency.observe(seconds);
}

void TierStatsRecorder::record_miss(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.misses;
  stats_.get_latency.observe(seconds);
}

void TierStatsRecorder::record_put(int64_t payload_bytes, double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.bytes_written += payload_bytes;
  stats_.put_latency.observe(seconds);
}

void TierStatsRecorder::record_error() {
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.errors;
}

void TierStatsRecorder::record_evictions(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.evictions += n;
}

void TierStatsRecorder::record_dropped_stores(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.dropped_stores += n;
}

void TierStatsRecorder::set_stored(int64_t num_chunks, int64_t num_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.stored_chunks = num_chunks;
  stats_.stored_bytes = num_bytes;
}

TierStats TierStatsRecorder::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace strata
