#include "spec/speculation_gate.h"

#include <algorithm>
#include <bit>

namespace strata {

void SpeculationGate::Window::add(double x) {
  samples[static_cast<size_t>(count % kWindow)] = x;
  ++count;
}

double SpeculationGate::Window::min_of_latest(int32_t m) const {
  const int32_t n = std::min({count, kWindow, m});
  if (n <= 0) return 0.0;
  double best = samples[static_cast<size_t>((count - 1) % kWindow)];
  for (int32_t i = 1; i < n; ++i) {
    best = std::min(best, samples[static_cast<size_t>((count - 1 - i) % kWindow)]);
  }
  return best;
}

double SpeculationGate::Window::median() const {
  const int32_t n = std::min(count, kWindow);
  if (n == 0) return 0.0;
  std::array<double, kWindow> sorted = samples;
  std::sort(sorted.begin(), sorted.begin() + n);
  return n % 2 == 1
             ? sorted[static_cast<size_t>(n / 2)]
             : 0.5 * (sorted[static_cast<size_t>(n / 2 - 1)] + sorted[static_cast<size_t>(n / 2)]);
}

double SpeculationGate::Window::mean() const {
  const int32_t n = std::min(count, kWindow);
  if (n == 0) return 0.0;
  double sum = 0.0;
  for (int32_t i = 0; i < n; ++i) sum += samples[static_cast<size_t>(i)];
  return sum / n;
}

SpeculationGate::SpeculationGate(int32_t num_speculative_tokens, bool cost_gating)
    : num_speculative_tokens_(num_speculative_tokens), cost_gating_(cost_gating) {}

size_t SpeculationGate::bucket_of(int32_t num_decoding) {
  // 1 -> 0, 2..3 -> 1, 4..7 -> 2, ...
  const uint32_t n = static_cast<uint32_t>(std::max(1, num_decoding));
  return std::min(static_cast<size_t>(std::bit_width(n) - 1), kNumBuckets - 1);
}

namespace {
double cost_ratio_of(double draft_seconds, double plain_seconds) {
  return draft_seconds / std::max(1e-12, plain_seconds);
}
}  // namespace

double SpeculationGate::Bucket::cost_ratio() const {
  // The minimum of as many samples on each side: a minimum over more
  // samples is lower, which would favour the side measured more often.
  const int32_t m = std::min(plain_seconds.count, draft_seconds.count);
  return cost_ratio_of(draft_seconds.min_of_latest(m), plain_seconds.min_of_latest(m));
}

bool SpeculationGate::decide(Bucket& b) const {
  // Measure both sides first: plain steps, then drafting ones.
  if (b.plain_seconds.count < kWarmup) return false;
  if (b.draft_seconds.count == 0) return true;
  const double edge = b.draft_yield.mean() / std::max(1e-12, b.cost_ratio() * (1.0 + kMargin));
  // A drafting step that yields less than half its cost ends the warm-up
  // early: at large batches one such step costs several plain ones, and a
  // misjudgement is corrected by the next probe.
  if (b.draft_seconds.count < kWarmup) return edge >= 0.5;
  return edge > 1.0;
}

int32_t SpeculationGate::drafts_for_step(int32_t num_decoding) {
  if (!cost_gating_) {
    stats_.is_drafting = true;
    return num_speculative_tokens_;
  }
  Bucket& b = buckets_[bucket_of(num_decoding)];
  const bool decision = decide(b);
  if (decision != b.drafting) {
    b.drafting = decision;
    b.probe_interval = kFirstProbeInterval;
    b.steps_since_probe = 0;
  }
  bool drafting = decision;
  if (b.probe_steps_left == 0 && b.plain_seconds.count >= kWarmup &&
      b.draft_seconds.count >= kWarmup && ++b.steps_since_probe >= b.probe_interval) {
    // Re-measure the side not chosen; back off while it keeps losing. A
    // close call gets a burst of steps, enough to move the medians; a clear
    // one a single step, so a losing side stays cheap.
    const double cost = b.cost_ratio();
    const double edge = b.draft_yield.mean() / std::max(1e-12, cost * (1.0 + kMargin));
    b.probe_steps_left = edge > 1.0 / 1.5 && edge < 1.5 ? kProbeBurst : 1;
    b.steps_since_probe = 0;
    b.probe_interval = std::min(kMaxProbeInterval, b.probe_interval * 2);
  }
  if (b.probe_steps_left > 0) {
    --b.probe_steps_left;
    drafting = !decision;
  }
  stats_.is_drafting = drafting;
  return drafting ? num_speculative_tokens_ : 0;
}

void SpeculationGate::observe(const GateObservation& step) {
  if (step.num_decoding <= 0) return;
  const int64_t produced = step.num_decoding + step.num_accepted;
  num_observed_requests_ += step.num_decoding;
  num_observed_tokens_ += produced;
  stats_.tokens_per_step =
      static_cast<double>(num_observed_tokens_) / static_cast<double>(num_observed_requests_);
  if (step.num_draft_tokens > 0) {
    ++stats_.num_draft_steps;
    stats_.num_draft_tokens += step.num_draft_tokens;
    stats_.num_accepted_tokens += step.num_accepted;
  } else {
    ++stats_.num_plain_steps;
  }
  if (!step.is_decode_only) return;
  Bucket& b = buckets_[bucket_of(step.num_decoding)];
  const double per_request = step.seconds / step.num_decoding;
  if (step.num_draft_tokens > 0) {
    b.draft_seconds.add(per_request);
    b.draft_yield.add(static_cast<double>(produced) / step.num_decoding);
  } else {
    b.plain_seconds.add(per_request);
  }
  if (b.plain_seconds.count > 0 && b.draft_seconds.count > 0) {
    stats_.cost_ratio = b.cost_ratio();
    stats_.draft_yield = b.draft_yield.mean();
  }
}

}  // namespace strata
