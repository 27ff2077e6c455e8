// Prng: a seeded xoshiro256** generator (state from splitmix64) with a
// Box-Muller normal sampler, written so that the same seed gives the same
// bits on every machine: only integer ops and IEEE +, -, *, / and sqrt (the
// log and cos/sin Box-Muller needs are evaluated by fixed polynomials here,
// never by the platform's libm, whose last bits may differ). Not
// thread-safe; give each thread (or each tensor row) its own instance.
#pragma once

#include <cmath>
#include <cstdint>

#include "util/xoshiro.h"

namespace strata::mkmodel {

using strata::splitmix64;

// A stable 64-bit mix of a seed and a stream id (tensor, row).
inline uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  uint64_t s = seed ^ (stream * 0xD1B54A32D192ED03ull);
  return splitmix64(&s);
}

// FNV-1a of a name, to derive per-tensor streams independent of file order.
inline uint64_t name_hash(const char* s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (; *s; ++s) h = (h ^ static_cast<uint8_t>(*s)) * 0x100000001b3ull;
  return h;
}

// ln(x) for x > 0: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), then
// ln(m) = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172, series to s^17
// (relative error < 1e-14).
inline double portable_log(double x) {
  int e = 0;
  double m = std::frexp(x, &e);  // exact: m in [0.5, 1)
  if (m < 0.70710678118654752) {
    m *= 2.0;
    --e;
  }
  constexpr double kInvOdd[9] = {1.0,      1.0 / 3,  1.0 / 5,  1.0 / 7, 1.0 / 9,
                                 1.0 / 11, 1.0 / 13, 1.0 / 15, 1.0 / 17};
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double poly = kInvOdd[8];
  for (int k = 7; k >= 0; --k) poly = poly * s2 + kInvOdd[k];
  return 2.0 * s * poly + e * 0.69314718055994531;
}

// Taylor coefficients (-1)^k / (2k)! and (-1)^k / (2k+1)!, folded at compile
// time (constexpr: the same doubles on every machine).
struct TrigCoefficients {
  double cos_c[8];
  double sin_c[8];
  constexpr TrigCoefficients() : cos_c(), sin_c() {
    double fact = 1.0;  // (2k)!
    for (int k = 0; k < 8; ++k) {
      if (k > 0) fact *= (2.0 * k - 1) * (2.0 * k);
      const double sign = k % 2 ? -1.0 : 1.0;
      cos_c[k] = sign / fact;
      sin_c[k] = sign / (fact * (2.0 * k + 1));
    }
  }
};
inline constexpr TrigCoefficients kTrig{};

// cos and sin of 2*pi*u for u in [0, 1): reduce to a quarter turn
// f in [-pi/4, pi/4], Taylor polynomials to degree 14/15 (error < 1e-14),
// then rotate by the quadrant.
inline void portable_cos_sin_turns(double u, double* c, double* s) {
  const double r = u * 4.0;
  const double q = std::floor(r + 0.5);  // quadrant 0..4
  const double f = (r - q) * 1.5707963267948966;
  const double f2 = f * f;
  double cp = kTrig.cos_c[7], sp = kTrig.sin_c[7];
  for (int k = 6; k >= 0; --k) {
    cp = cp * f2 + kTrig.cos_c[k];
    sp = sp * f2 + kTrig.sin_c[k];
  }
  const double cf = cp, sf = f * sp;
  switch (static_cast<int>(q) & 3) {
    case 0:
      *c = cf;
      *s = sf;
      break;
    case 1:
      *c = -sf;
      *s = cf;
      break;
    case 2:
      *c = -cf;
      *s = -sf;
      break;
    default:
      *c = sf;
      *s = -cf;
      break;
  }
}

class Prng {
 public:
  explicit Prng(uint64_t seed) : gen_(seed) {}

  uint64_t next_u64() { return gen_.next_u64(); }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return gen_.next_unit(); }

  // Standard normal (Box-Muller; the second value of each pair is kept).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    const double radius = std::sqrt(-2.0 * portable_log(u1));
    double c, s;
    portable_cos_sin_turns(u2, &c, &s);
    spare_ = radius * s;
    has_spare_ = true;
    return radius * c;
  }

 private:
  Xoshiro256 gen_;
  double spare_ = 0;
  bool has_spare_ = false;
};

}  // namespace strata::mkmodel
