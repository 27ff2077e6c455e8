#include "spec/speculation_gate.h"

#include <algorithm>
#include <bit>

namespace strata {

void SpeculationGate::Ema::add(double x) {
  // The first samples average plainly; then recent steps weigh 1/4.
  ++count;
  const double w = std::max(0.25, 1.0 / count);
  value += w * (x - value);
}

SpeculationGate::SpeculationGate(int32_t num_speculative_tokens, bool cost_gating)
    : num_speculative_tokens_(num_speculative_tokens), cost_gating_(cost_gating) {}

size_t SpeculationGate::bucket_of(int32_t num_decoding) {
  const uint32_t n = static_cast<uint32_t>(std::max(1, num_decoding));
  if (n <= 16) return n - 1;
  // 17..31 -> 16, 32..63 -> 17, ...
  const size_t b = 16 + static_cast<size_t>(std::bit_width(n) - 5) - 1;
  return std::min(b, kNumBuckets - 1);
}

bool SpeculationGate::decide(Bucket& b) const {
  // Measure both sides first: plain steps, then drafting ones.
  if (b.plain_seconds.count < kWarmup) return false;
  if (b.draft_seconds.count < kWarmup) return true;
  const double cost = b.draft_seconds.value / std::max(1e-12, b.plain_seconds.value);
  return b.draft_yield.value > cost * (1.0 + kMargin);
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
  if (b.plain_seconds.count >= kWarmup && b.draft_seconds.count >= kWarmup &&
      ++b.steps_since_probe >= b.probe_interval) {
    // Re-measure the side not chosen once; back off while it keeps losing.
    drafting = !decision;
    b.steps_since_probe = 0;
    b.probe_interval = std::min(kMaxProbeInterval, b.probe_interval * 2);
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
  if (step.num_draft_tokens > 0) {
    b.draft_seconds.add(step.seconds);
    b.draft_yield.add(static_cast<double>(produced) / step.num_decoding);
  } else {
    b.plain_seconds.add(step.seconds);
  }
  if (b.plain_seconds.count > 0 && b.draft_seconds.count > 0) {
    stats_.cost_ratio = b.draft_seconds.value / std::max(1e-12, b.plain_seconds.value);
    stats_.draft_yield = b.draft_yield.value;
  }
}

}  // namespace strata
