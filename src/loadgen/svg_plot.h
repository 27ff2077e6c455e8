// The --plot SVG of `strata bench serve`, written as plain SVG text (no
// library): four latency CDF panels (TTFT, TPOT, ITL, E2E latency; one line
// per run, e.g. per concurrency of a sweep) and, when sweep points are
// given, a chart of output throughput (left axis) and mean TPOT (right
// axis) against concurrency. Each panel has axes, ticks, axis labels, a
// title and a legend. Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loadgen/request_outcome.h"

namespace strata::loadgen {

struct LatencySamples {
  std::string label;  // legend text, e.g. "c=8"
  std::vector<double> ttft_ms, tpot_ms, itl_ms, e2el_ms;
};

struct SweepPoint {
  int32_t concurrency = 0;
  double output_tok_s = 0.0;
  double mean_tpot_ms = 0.0;
};

// The successful requests' latencies in milliseconds (TPOT only for > 1
// output token), as the metrics use them.
LatencySamples latency_samples_of(const std::vector<RequestOutcome>& outcomes, std::string label);

std::string render_benchmark_svg(const std::string& title, const std::vector<LatencySamples>& runs,
                                 const std::vector<SweepPoint>& sweep);

// "Nice" axis ticks (steps of 1, 2 or 5 x 10^k) covering [0, max_value];
// about `target` ticks, starting at 0. Exposed for tests.
std::vector<double> nice_ticks(double max_value, int target);

// Escapes &, <, >, " for XML text and attributes.
std::string xml_escape(const std::string& s);

}  // namespace strata::loadgen
