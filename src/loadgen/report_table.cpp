#include "loadgen/report_table.h"

#include <cmath>
#include <cstdio>

#include "loadgen/arrival_schedule.h"
#include "loadgen/result_json.h"

namespace strata::loadgen {
namespace {

constexpr size_t kWidth = 50;

std::string banner(const std::string& title, char fill) {
  const std::string t = fill == '=' ? " " + title + " " : title;
  if (t.size() >= kWidth) return t;
  const size_t left = (kWidth - t.size()) / 2;
  return std::string(left, fill) + t + std::string(kWidth - t.size() - left, fill);
}

std::string row(const std::string& label, const std::string& value) {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "%-40s %-10s", label.c_str(), value.c_str());
  std::string s = buf;
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s + "\n";
}

std::string fmt2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.2f", v);
  return buf;
}

std::string section(const char* title, const char* abbrev, const LatencyStats& st) {
  std::string s = banner(title, '-') + "\n";
  const std::string a = abbrev;
  s += row("Mean " + a + " (ms):", fmt2(st.mean_ms));
  s += row("Median " + a + " (ms):", fmt2(st.median_ms));
  s += row("Std " + a + " (ms):", fmt2(st.std_ms));
  for (const auto& [p, v] : st.percentiles_ms) {
    if (p == 50.0) continue;
    s += row("P" + percentile_key(p) + " " + a + " (ms):", fmt2(v));
  }
  return s;
}

}  // namespace

std::string format_report(const BenchmarkMetrics& m, const ReportHeader& header) {
  std::string s = banner("Serving Benchmark Result", '=') + "\n";
  s += row("Successful requests:", std::to_string(m.num_completed));
  s += row("Failed requests:", std::to_string(m.num_failed));
  if (header.max_concurrency > 0) {
    s += row("Maximum request concurrency:", std::to_string(header.max_concurrency));
  }
  s += row("Request rate configured (RPS):",
           is_unlimited_rate(header.request_rate) ? "inf" : fmt2(header.request_rate));
  s += row("Benchmark duration (s):", fmt2(m.duration_s));
  s += row("Total input tokens:", std::to_string(m.total_input_tokens));
  s += row("Total generated tokens:", std::to_string(m.total_output_tokens));
  s += row("Request throughput (req/s):", fmt2(m.request_throughput));
  if (m.request_goodput) s += row("Request goodput (req/s):", fmt2(*m.request_goodput));
  s += row("Output token throughput (tok/s):", fmt2(m.output_throughput));
  s += row("Total Token throughput (tok/s):", fmt2(m.total_token_throughput));
  s += row("Peak concurrent requests:", std::to_string(m.max_concurrent_requests));
  s += section("Time to First Token", "TTFT", m.ttft);
  s += section("Time per Output Token (excl. 1st token)", "TPOT", m.tpot);
  s += section("Inter-token Latency", "ITL", m.itl);
  s += section("End-to-end Latency", "E2EL", m.e2el);
  s += std::string(kWidth, '=') + "\n";
  for (size_t i = 0; i < m.first_errors.size(); ++i) {
    s += "error " + std::to_string(i + 1) + ": " + m.first_errors[i] + "\n";
  }
  return s;
}

std::string format_sweep_table(const std::vector<SweepRow>& rows) {
  std::string s = banner("Concurrency Sweep", '=') + "\n";
  char buf[200];
  std::snprintf(buf, sizeof(buf), "%11s %9s %12s %12s %12s %12s\n", "concurrency", "req/s",
                "out tok/s", "mean TTFT", "mean TPOT", "p99 ITL");
  s += buf;
  for (const SweepRow& r : rows) {
    double p99_itl =
        r.metrics.itl.percentiles_ms.empty() ? 0.0 : r.metrics.itl.percentiles_ms.back().second;
    for (const auto& [p, v] : r.metrics.itl.percentiles_ms) {
      if (p == 99.0) p99_itl = v;
    }
    std::snprintf(buf, sizeof(buf), "%11d %9.2f %12.2f %10.2fms %10.2fms %10.2fms\n",
                  r.max_concurrency, r.metrics.request_throughput, r.metrics.output_throughput,
                  r.metrics.ttft.mean_ms, r.metrics.tpot.mean_ms, p99_itl);
    s += buf;
  }
  s += std::string(kWidth, '=') + "\n";
  return s;
}

}  // namespace strata::loadgen
