#include "loadgen/benchmark_metrics.h"

#include <algorithm>
#include <cmath>

namespace strata::loadgen {

double percentile_of_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

LatencyStats compute_latency_stats(std::vector<double> values_s,
                                   const std::vector<double>& percentiles) {
  LatencyStats st;
  for (double p : percentiles) st.percentiles_ms.emplace_back(p, 0.0);
  if (values_s.empty()) return st;
  std::sort(values_s.begin(), values_s.end());
  const auto n = static_cast<double>(values_s.size());
  double sum = 0.0;
  for (double v : values_s) sum += v;
  const double mean = sum / n;
  double sq = 0.0;
  for (double v : values_s) sq += (v - mean) * (v - mean);
  st.num_samples = static_cast<int64_t>(values_s.size());
  st.mean_ms = mean * 1e3;
  st.std_ms = std::sqrt(sq / n) * 1e3;
  st.median_ms = percentile_of_sorted(values_s, 50.0) * 1e3;
  st.min_ms = values_s.front() * 1e3;
  st.max_ms = values_s.back() * 1e3;
  for (auto& [p, v] : st.percentiles_ms) v = percentile_of_sorted(values_s, p) * 1e3;
  return st;
}

namespace {

int64_t max_overlap(const std::vector<RequestOutcome>& outcomes) {
  // +1 at each start, -1 at each end; ends sort before starts at equal times.
  std::vector<std::pair<double, int>> edges;
  for (const RequestOutcome& o : outcomes) {
    edges.emplace_back(o.start_s, +1);
    edges.emplace_back(o.start_s + o.e2e_s, -1);
  }
  std::sort(edges.begin(), edges.end());
  int64_t cur = 0, best = 0;
  for (const auto& [t, d] : edges) {
    cur += d;
    best = std::max(best, cur);
  }
  return best;
}

}  // namespace

BenchmarkMetrics aggregate_metrics(const std::vector<RequestOutcome>& outcomes, double duration_s,
                                   const SloOptions& slo, const std::vector<double>& percentiles) {
  BenchmarkMetrics m;
  m.duration_s = duration_s;
  std::vector<double> ttfts, tpots, itls, e2els;
  for (const RequestOutcome& o : outcomes) {
    if (!o.is_success) {
      ++m.num_failed;
      if (m.first_errors.size() < kMaxErrorsKept &&
          std::find(m.first_errors.begin(), m.first_errors.end(), o.error) ==
              m.first_errors.end()) {
        m.first_errors.push_back(o.error);
      }
      continue;
    }
    ++m.num_completed;
    m.total_input_tokens += std::max<int64_t>(o.num_prompt_tokens, 0);
    m.total_output_tokens += o.num_output_tokens;
    ttfts.push_back(o.ttft_s);
    e2els.push_back(o.e2e_s);
    if (o.num_output_tokens > 1) tpots.push_back(o.tpot_s());
    itls.insert(itls.end(), o.itls_s.begin(), o.itls_s.end());
    bool is_good = true;
    if (slo.ttft_ms && o.ttft_s * 1e3 > *slo.ttft_ms) is_good = false;
    if (slo.tpot_ms && o.tpot_s() * 1e3 > *slo.tpot_ms) is_good = false;
    if (slo.e2el_ms && o.e2e_s * 1e3 > *slo.e2el_ms) is_good = false;
    if (is_good) ++m.num_good;
  }
  if (!slo.is_any()) m.num_good = 0;
  const double d = duration_s > 0.0 ? duration_s : 0.0;
  auto per_s = [d](double x) { return d > 0.0 ? x / d : 0.0; };
  m.request_throughput = per_s(static_cast<double>(m.num_completed));
  if (slo.is_any()) m.request_goodput = per_s(static_cast<double>(m.num_good));
  m.output_throughput = per_s(static_cast<double>(m.total_output_tokens));
  m.total_token_throughput =
      per_s(static_cast<double>(m.total_input_tokens + m.total_output_tokens));
  m.max_concurrent_requests = max_overlap(outcomes);
  m.ttft = compute_latency_stats(std::move(ttfts), percentiles);
  m.tpot = compute_latency_stats(std::move(tpots), percentiles);
  m.itl = compute_latency_stats(std::move(itls), percentiles);
  m.e2el = compute_latency_stats(std::move(e2els), percentiles);
  return m;
}

}  // namespace strata::loadgen
