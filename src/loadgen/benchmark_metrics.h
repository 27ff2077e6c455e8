// Benchmark metrics: the aggregate of a run's RequestOutcomes, with vLLM's
// `bench serve` definitions (docs/bench_serve.md):
//  - completed = successful requests; token totals sum over them only;
//  - request/output/total-token throughput = count / duration;
//  - TTFT and E2E per successful request; TPOT per successful request with
//    more than one output token; ITL pooled over all successful requests;
//  - mean, population std (ddof 0), median and percentiles by linear
//    interpolation between closest ranks (numpy's default); 0 when empty;
//  - goodput = successful requests meeting every given SLO / duration
//    (TTFT <= slo, TPOT <= slo, E2E <= slo); absent when no SLO is given.
// Values are reported in milliseconds. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loadgen/request_outcome.h"

namespace strata::loadgen {

struct LatencyStats {
  int64_t num_samples = 0;
  double mean_ms = 0.0;
  double median_ms = 0.0;
  double std_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;
  std::vector<std::pair<double, double>> percentiles_ms;  // (p in [0,100], value)
};

struct SloOptions {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2el_ms;
  bool is_any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

struct BenchmarkMetrics {
  int64_t num_completed = 0;
  int64_t num_failed = 0;
  int64_t total_input_tokens = 0;
  int64_t total_output_tokens = 0;
  double duration_s = 0.0;
  double request_throughput = 0.0;        // completed requests / s
  std::optional<double> request_goodput;  // good requests / s (with SLOs only)
  int64_t num_good = 0;
  double output_throughput = 0.0;       // output tokens / s
  double total_token_throughput = 0.0;  // (input + output) tokens / s
  int64_t max_concurrent_requests = 0;  // most requests in flight at once
  LatencyStats ttft, tpot, itl, e2el;
  std::vector<std::string> first_errors;  // up to kMaxErrorsKept distinct messages
};

inline constexpr size_t kMaxErrorsKept = 5;

// Linear-interpolation percentile of sorted values, p in [0, 100].
double percentile_of_sorted(const std::vector<double>& sorted, double p);

// Stats of values given in seconds, reported in milliseconds.
LatencyStats compute_latency_stats(std::vector<double> values_s,
                                   const std::vector<double>& percentiles);

BenchmarkMetrics aggregate_metrics(const std::vector<RequestOutcome>& outcomes, double duration_s,
                                   const SloOptions& slo, const std::vector<double>& percentiles);

}  // namespace strata::loadgen
