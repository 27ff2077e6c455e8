// Metrics: the serving engine's counters, gauges and latency histograms, the
// source a server exports as Prometheus text (vLLM's metric names, prefixed
// "strata:").
//
// The engine thread records; any thread reads (snapshot(),
// to_prometheus_text()). Thread-safe: one mutex, taken once per record call
// (at most a few times per token), never across a model step.
//
// Histograms use fixed Prometheus-style bucket upper bounds (seconds), chosen
// for CPU serving where a step takes 10 ms .. seconds; counts are cumulative
// in the exported text as Prometheus requires ("le" buckets + "+Inf").
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sched/request.h"

namespace strata {

// A histogram's state: counts[i] observations <= bounds[i] (not cumulative),
// counts.back() those above every bound.
struct HistogramSnapshot {
  std::vector<double> bounds;   // ascending upper bounds
  std::vector<int64_t> counts;  // [bounds.size() + 1]
  double sum = 0.0;
  int64_t count = 0;
};

struct MetricsSnapshot {
  HistogramSnapshot time_to_first_token;   // arrival -> first token
  HistogramSnapshot inter_token_latency;   // between consecutive tokens of a choice
  HistogramSnapshot e2e_request_latency;   // arrival -> finish
  HistogramSnapshot request_queue_time;    // arrival -> first scheduled
  HistogramSnapshot request_prefill_time;  // first scheduled -> first token
  HistogramSnapshot request_decode_time;   // first token -> finish
  // Gauges, as of the last engine step.
  int64_t num_requests_running = 0;
  int64_t num_requests_waiting = 0;
  double kv_cache_usage = 0.0;  // fraction in [0, 1]
  // Counters (monotone).
  int64_t prefix_cache_queries_tokens = 0;
  int64_t prefix_cache_hits_tokens = 0;
  int64_t num_preemptions = 0;
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  // Finished choices by reason: stop, length, abort, error.
  int64_t request_success_stop = 0;
  int64_t request_success_length = 0;
  int64_t request_success_abort = 0;
  int64_t request_success_error = 0;
};

class Metrics {
 public:
  Metrics();

  void observe_time_to_first_token(double seconds);
  void observe_inter_token_latency(double seconds);
  void observe_e2e_request_latency(double seconds);
  void observe_request_queue_time(double seconds);
  void observe_request_prefill_time(double seconds);
  void observe_request_decode_time(double seconds);

  // Gauges and the scheduler's running totals (absolute values).
  void set_scheduler_state(int64_t num_running, int64_t num_waiting, double kv_usage,
                           int64_t prefix_query_tokens, int64_t prefix_hit_tokens,
                           int64_t num_preemptions);
  void add_prompt_tokens(int64_t n);
  void add_generation_tokens(int64_t n);
  void add_finished(FinishReason reason);

  MetricsSnapshot snapshot() const;
  // Prometheus text exposition format (version 0.0.4). `model_name`, when
  // non-empty, becomes a model_name label on every sample.
  std::string to_prometheus_text(std::string_view model_name = "") const;

 private:
  mutable std::mutex mu_;
  MetricsSnapshot s_;
};

// Adds `seconds` to `h`.
void observe(HistogramSnapshot& h, double seconds);
// The q-quantile (0..1) estimated by linear interpolation inside the bucket,
// as Prometheus' histogram_quantile does; 0 when empty.
double histogram_quantile(const HistogramSnapshot& h, double q);

}  // namespace strata
