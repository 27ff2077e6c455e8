// StepCostModel: what a decode step of n tokens costs on this machine, as
// measured. Speculative decoding asks it how much a step grows when drafts
// are added: a step of B decoding requests computes B tokens, the same step
// with D drafts B + D, and whether the D drafts pay depends on
// T(B + D) / T(B), which depends on the model, the CPU, the kernels' paths
// (a GEMV-like step of a few tokens streams the weights once; many tokens
// become compute-bound) and the context lengths. No formula gets that right
// everywhere, so the engine measures it.
//
// Samples are (tokens in the step, seconds), decode-only steps (prefill
// chunks add attention the decodes do not have). They are filed in buckets
// by token count: one per count up to 32, then eight per octave. A bucket
// keeps its latest kWindow samples; its estimate is their minimum (other
// load on the machine only ever adds time to a step, so the minimum is what
// the step itself costs), once it has kMinSamples of them: a single step
// can take many times its cost (a page fault, a first use of a buffer, the
// other process on the core), and a size judged by one such step would
// never be tried again. A sample expires after kMaxAge recorded steps, so
// a size measured long ago (shorter contexts, another workload) is measured
// again when the policy next wants it.
//
// The machine's speed drifts: on a shared VM the same step can take twice
// as long for a minute (the other tenants' load, the clock), which would
// make sizes sampled at different moments incomparable. So the model also
// tracks a speed factor: each sample of a measured size moves it towards
// that sample over the size's typical normalised cost (a geometric
// average, kSpeedGain per step, each step's pull clamped to kMaxSpeedStep),
// and samples are kept divided by it. Only a sample of the same token count
// as its bucket's typical one moves the speed (or the typical): in a wide
// bucket a step of 47 tokens is not a slow step of 40, and reading it as one
// made the speed, and so every estimate, drift with the mix of sizes drawn. A size's typical cost
// starts as the median of its first kMinSamples and then moves kTypicalGain as fast as the speed
// does, so a slowdown seen at one size is read as the machine's (it usually is: the contexts'
// growth too slows every size alike), not as that size's. Estimates are the normalised costs times
// the current speed; a ratio of two estimates compares the sizes at one speed.
//
// A measured bucket is a point: its cheapest live sample, at that sample's
// own token count (a wide bucket's samples differ in size, and the cheapest
// is likely a small one: the bucket's mean count would pair one size with
// another's cost). estimate(n) interpolates linearly between the points
// around n (so sizes inside a wide bucket differ too: a draft more is never
// free); above the largest it extends the least-squares slope of the points
// (flat when fewer than two are measured: unknown larger steps are assumed
// cheap, so a policy that would use them tries them and measures); below
// the smallest it carries the first segment's slope down (the smallest's
// cost with one point), never below the smallest's cost per token times n.
// Not thread-safe (the engine thread owns it); time comes from the caller,
// so tests use made-up costs.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace strata {

class StepCostModel {
 public:
  static constexpr int32_t kWindow = 8;
  static constexpr int32_t kMinSamples = 3;
  static constexpr double kSpeedGain = 0.5;
  static constexpr double kMaxSpeedStep = 1.25;
  static constexpr double kTypicalGain = 0.02;
  static constexpr int64_t kMaxAge = 4096;  // recorded steps

  // A decode-only step of `num_tokens` (>= 1) took `seconds`.
  void record(int32_t num_tokens, double seconds);
  // Estimated seconds of a decode-only step of `num_tokens` (>= 1); 0 when
  // nothing is measured yet.
  double estimate(int32_t num_tokens) const;
  // Whether a bucket holding `num_tokens` has kMinSamples unexpired
  // samples, and the step index of its newest (-1: it has not).
  bool is_measured(int32_t num_tokens) const { return newest_sample(num_tokens) >= 0; }
  int64_t newest_sample(int32_t num_tokens) const;
  int64_t num_recorded() const { return num_recorded_; }
  // The token count of the largest measured bucket's point (0: none);
  // estimates above it are extrapolated.
  int32_t largest_measured() const;
  // The current speed factor (1 at the start; 2: steps take twice as long
  // as when the normalised samples were taken).
  double speed() const { return speed_; }

  // Bucket of a token count, and the smallest count a bucket holds.
  static int32_t bucket_of(int32_t num_tokens);
  static int32_t bucket_start(int32_t bucket);

 private:
  struct Sample {
    double seconds = 0.0;
    int64_t step = -1;  // num_recorded_ when it was recorded
    int32_t num_tokens = 0;
  };
  struct Bucket {
    std::array<Sample, kWindow> samples{};
    int32_t next = 0;            // ring position of the next sample
    double typical = 0.0;        // normalised; 0 until measured
    int32_t typical_tokens = 0;  // the step size `typical` is of
  };
  // A measured bucket's point: its cheapest live sample's token count and
  // cost.
  struct Point {
    double num_tokens;
    double seconds;
  };
  bool is_live(const Sample& s) const { return s.step >= 0 && num_recorded_ - s.step <= kMaxAge; }
  bool point_of(int32_t bucket, Point* out) const;
  // The median live sample of a measured bucket (nullptr: not measured).
  const Sample* median_of(int32_t bucket) const;
  double estimate_at_reference_speed(int32_t num_tokens) const;
  // The measured buckets' points in order (and slope_), cached until the
  // next record().
  const std::vector<Point>& points() const;

  std::vector<Bucket> buckets_;
  int64_t num_recorded_ = 0;
  double speed_ = 1.0;
  mutable std::vector<Point> points_;
  mutable double slope_ = 0.0;
  mutable bool points_valid_ = false;
};

}  // namespace strata
