// The terminal report of `strata bench serve`, laid out like vLLM's
// ("============ Serving Benchmark Result ============", one "label: value"
// row per metric, a dashed section per latency). Pure; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "loadgen/benchmark_metrics.h"

namespace strata::loadgen {

struct ReportHeader {
  int32_t max_concurrency = 0;  // 0 = not capped (row omitted)
  double request_rate = 0.0;    // <= 0 or inf = "inf"
};

std::string format_report(const BenchmarkMetrics& m, const ReportHeader& header);

// One line per concurrency of a sweep: concurrency, req/s, output tok/s,
// mean TTFT, mean TPOT, p99 ITL.
struct SweepRow {
  int32_t max_concurrency = 0;
  BenchmarkMetrics metrics;
};
std::string format_sweep_table(const std::vector<SweepRow>& rows);

}  // namespace strata::loadgen
