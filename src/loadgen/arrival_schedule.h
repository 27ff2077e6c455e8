// Arrival schedule: when each request of a benchmark is sent, as offsets in
// seconds from the start. Gaps between arrivals are drawn from a gamma
// distribution of shape `burstiness` and mean 1/request_rate (burstiness 1 =
// a Poisson process; < 1 burstier, > 1 more regular), as vLLM's
// `bench serve` defines it. An infinite rate sends everything at t = 0.
// Deterministic by seed on every platform (own samplers over Xoshiro256).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "util/xoshiro.h"

namespace strata::loadgen {

struct ArrivalOptions {
  double request_rate = 0.0;  // requests/s; <= 0 or inf = all at once
  double burstiness = 1.0;    // gamma shape, > 0
  uint64_t seed = 0;
};

// True when the options mean "send everything at once".
bool is_unlimited_rate(double request_rate);

// Returns num_requests non-decreasing send times in seconds. With a finite
// rate the first request also waits its own gap, so the n-th arrival is the
// sum of n gaps.
std::vector<double> make_arrival_times_s(int64_t num_requests, const ArrivalOptions& opt);

// One gamma(shape, scale) draw (Marsaglia-Tsang; shape < 1 via the
// u^(1/shape) boost). Exposed for tests.
double sample_gamma(double shape, double scale, Xoshiro256* rng);

}  // namespace strata::loadgen
