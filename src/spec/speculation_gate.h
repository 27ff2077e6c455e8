// SpeculationGate: decides, step by step, whether decoding requests get
// drafts, from this machine's measured costs. A verify step computes k + 1
// tokens per request instead of 1; it pays only when the tokens it yields
// per request (1 + accepted drafts) exceed its cost relative to a plain
// decode step at the same batch size. Both are measured per batch-size
// class (1, 2-3, 4-7, 8-15, ... requests) over the latest decode-only steps
// of each kind:
//   cost ratio  = fastest seconds per request of a drafting step
//                 / fastest seconds per request of a plain step
//   yield       = mean tokens produced per request in a drafting step
// and the gate drafts while yield > cost ratio * (1 + margin). The fastest
// of the latest m of each kind (m = the fewer samples either has, at most
// 15), because other load only ever adds time to a step (on a shared
// machine a step now and then takes many times its usual time), so the
// minimum is the estimate of what the step itself costs, and a minimum
// over equally many samples does not favour the side measured more often;
// seconds per request, so steps of 9 and of 14 requests compare. The side not chosen is re-measured
// now and then (every 32 steps of that class at first, backing off to every 256 while the decision
// stands; three steps in a row when yield and cost are within 1.5x of each other, else one), so a
// change in acceptance (a new workload) or cost (longer contexts) is noticed, and a clearly losing
// side costs little. With gating off it always drafts.
//
// Steps whose drafting requests proposed nothing count as plain steps.
// Prefill steps are not timed (their cost is not the decodes'), only
// counted in the acceptance figures. Time comes from the caller (the
// engine's clock), so tests drive it with made-up seconds. Not
// thread-safe: the engine thread owns it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace strata {

// What one step's decodes did.
struct GateObservation {
  int32_t num_decoding = 0;      // requests that decoded (batch size)
  int64_t num_draft_tokens = 0;  // drafts verified
  int64_t num_accepted = 0;      // of them accepted
  double seconds = 0.0;          // its cost (the engine: CPU seconds of all threads)
  // The step decoded only (no prompt tokens), so `seconds` is the decodes'
  // cost; other steps count towards the acceptance figures alone.
  bool is_decode_only = true;
};

struct GateStats {
  int64_t num_draft_steps = 0;  // steps that verified drafts
  int64_t num_plain_steps = 0;  // steps that decoded without drafts
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  // Tokens per request per decode step (1 + accepted drafts), over every
  // observed decode step.
  double tokens_per_step = 0.0;
  // For the latest batch-size class observed with both kinds of steps:
  // seconds of a drafting step over a plain one (0 until measured), and the
  // yield.
  double cost_ratio = 0.0;
  double draft_yield = 0.0;
  bool is_drafting = false;  // the last decision

  double acceptance_rate() const {
    return num_draft_tokens > 0
               ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_draft_tokens)
               : 0.0;
  }
};

class SpeculationGate {
 public:
  // Drafts per request when drafting: num_speculative_tokens >= 1.
  SpeculationGate(int32_t num_speculative_tokens, bool cost_gating);

  // Drafts per request for a step in which `num_decoding` requests decode
  // (0: a plain step).
  int32_t drafts_for_step(int32_t num_decoding);
  // A step that ran (after drafts_for_step()).
  void observe(const GateObservation& step);
  const GateStats& stats() const { return stats_; }

  // Yield over cost must beat 1 by this much: a tie is not worth the risk.
  static constexpr double kMargin = 0.03;

 private:
  // The latest kWindow samples of one figure.
  struct Window {
    static constexpr int32_t kWindow = 15;
    std::array<double, kWindow> samples{};
    int32_t count = 0;  // samples seen (the window holds min(count, kWindow))
    void add(double x);
    // The smallest of the latest m samples.
    double min_of_latest(int32_t m) const;
    double median() const;
    double mean() const;
  };
  struct Bucket {
    Window plain_seconds;  // per request
    Window draft_seconds;  // per request
    Window draft_yield;    // tokens per request in drafting steps
    bool drafting = true;
    int32_t steps_since_probe = 0;
    int32_t probe_interval = kFirstProbeInterval;
    int32_t probe_steps_left = 0;  // of the probe under way
    double cost_ratio() const;
  };
  static constexpr int32_t kWarmup = 3;  // samples of each side before deciding
  static constexpr int32_t kFirstProbeInterval = 32;
  static constexpr int32_t kMaxProbeInterval = 256;
  static constexpr int32_t kProbeBurst = 3;  // probe steps when the call is close
  static constexpr size_t kNumBuckets = 16;

  static size_t bucket_of(int32_t num_decoding);
  bool decide(Bucket& b) const;

  int32_t num_speculative_tokens_;
  bool cost_gating_;
  std::array<Bucket, kNumBuckets> buckets_{};
  GateStats stats_;
  int64_t num_observed_requests_ = 0;  // sum of num_decoding over observed steps
  int64_t num_observed_tokens_ = 0;    // tokens those steps produced
};

}  // namespace strata
