#include "loadgen/arrival_schedule.h"

#include <cmath>
#include <numbers>

namespace strata::loadgen {
namespace {

// Standard normal by Box-Muller (one of the pair; simple and portable).
double sample_normal(Xoshiro256* rng) {
  double u1 = rng->next_unit();
  while (u1 <= 0.0) u1 = rng->next_unit();
  const double u2 = rng->next_unit();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

bool is_unlimited_rate(double request_rate) {
  return !(request_rate > 0.0) || std::isinf(request_rate);
}

double sample_gamma(double shape, double scale, Xoshiro256* rng) {
  if (shape < 1.0) {
    double u = rng->next_unit();
    while (u <= 0.0) u = rng->next_unit();
    return sample_gamma(shape + 1.0, scale, rng) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0.0, v = 0.0;
    do {
      x = sample_normal(rng);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = rng->next_unit();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

std::vector<double> make_arrival_times_s(int64_t num_requests, const ArrivalOptions& opt) {
  std::vector<double> times(static_cast<size_t>(std::max<int64_t>(num_requests, 0)), 0.0);
  if (is_unlimited_rate(opt.request_rate)) return times;
  Xoshiro256 rng(opt.seed ^ 0xA5517A1ull);
  const double shape = opt.burstiness > 0.0 ? opt.burstiness : 1.0;
  // Mean gap = shape * scale = 1 / rate.
  const double scale = 1.0 / (opt.request_rate * shape);
  double t = 0.0;
  for (double& out : times) {
    if (shape == 1.0) {
      // Exponential gaps directly: -ln(1 - u) / rate.
      t += -std::log1p(-rng.next_unit()) / opt.request_rate;
    } else {
      t += sample_gamma(shape, scale, &rng);
    }
    out = t;
  }
  return times;
}

}  // namespace strata::loadgen
