// SpeculationGate: decides, step by step, how many drafts each decoding
// request verifies, from this machine's measured costs, so that speculation
// is only spent where it pays.
//
// A step of B decoding requests with D drafts among them computes B + D
// tokens and takes T(B + D) seconds (StepCostModel, measured on this
// machine's decode-only steps); it yields B tokens plus the accepted drafts.
// A request's next draft is accepted with probability a: its own recent
// record of drafts of the proposal's match class, pulled towards every
// request's record of that class while it has little history, which is in
// turn pulled towards every request's record of all classes (a class
// rarely proposed borrows the others' rate); its i-th with a^i (drafts are
// accepted in order), so its i-th draft is worth a^i expected tokens. The
// gate ranks every proposed draft of the step by that worth and keeps the
// D best, choosing D to maximise expected tokens per second, (B + sum of
// their worths) / T(B + D), and only if that beats a plain step's B / T(B)
// by kMargin. So at batch 1 on a bandwidth-bound model it verifies long
// drafts, at a large compute-bound batch only the few drafts almost sure to
// be accepted (long matches), and none when even those do not pay.
//
// Measurement: a step with no live sample of its plain size B nor of a
// size within B / kNearDivisor of it (or only older ones than
// kRefreshSteps) runs without drafts, which measures T(B); drafting
// steps measure T(B + D) at the sizes the gate chooses, and a size never
// measured is assumed no dearer than the largest measured one, so it is
// tried once and then known. With gating off every proposed draft is
// verified.
//
// What drafting steps really yield is checked as well: the cost model's
// estimates can be wrong where a step's cost is about proportional to its
// tokens (a compute-bound batch) and the machine's speed drifts, and then
// an estimate of T(B + D) / T(B) a little too low keeps every step drafting
// at a loss. So the gate keeps, per batch size, the tokens per second of its
// latest plain decode-only steps (a step of B is run plain when the latest
// is older than kPlainRefreshSteps, or kMarginalPlainRefreshSteps while
// drafting barely pays, so this stays current while drafting)
// and, for every drafting decode-only step, its realised gain: (B + the
// selected drafts' expected worth) / seconds over that plain rate (the
// expected tokens, not the accepted ones: this checks the costs; whether
// a request's drafts are accepted is its record's business; a step at a
// size not measured yet was a try, and is not judged). When the median of the latest
// kGainWindow gains (judged once per window) is below 1 (drafting was
// slower than not drafting),
// drafting at that size stops for kMinVetoSteps, doubling on each repeat up
// to kMaxVetoSteps, and is then tried again; only a window that clearly
// pays (1 + kMargin) resets the doubling.
//
// Prefill steps are not timed (their cost is not the decodes'), only counted
// in the acceptance figures. Time comes from the caller (the engine's
// clock), so tests drive it with made-up seconds. Not thread-safe: the
// engine thread owns it.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "spec/draft_selector.h"
#include "spec/step_cost_model.h"

namespace strata {

// What one step's decodes did.
struct GateObservation {
  int32_t num_decoding = 0;      // requests that decoded (batch size)
  int64_t num_draft_tokens = 0;  // drafts verified
  int64_t num_accepted = 0;      // of them accepted
  double seconds = 0.0;          // its cost (the engine: wall seconds of the step)
  // The step decoded only (no prompt tokens), so `seconds` is the decodes'
  // cost; other steps count towards the acceptance figures alone.
  bool is_decode_only = true;
  // Of `seconds`, the drafter's proposals (made whether or not the step
  // drafted; the cost model records the step without them).
  double proposal_seconds = 0.0;
};

struct GateStats {
  int64_t num_draft_steps = 0;  // steps that verified drafts
  int64_t num_plain_steps = 0;  // steps that decoded without drafts
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  // Tokens per request per decode step (1 + accepted drafts), over every
  // observed decode step.
  double tokens_per_step = 0.0;
  // The latest step that drafted: its estimated cost over a plain step's
  // (T(B + D) / T(B)) and the tokens per request it was expected to yield.
  double cost_ratio = 0.0;
  double draft_yield = 0.0;
  bool is_drafting = false;  // the last step verified drafts
  // The realised-gain check: the latest median gain of drafting steps over
  // plain ones of their size (measured tokens per second; 0 until
  // kGainWindow drafting steps are known), and how often it stopped
  // drafting.
  double realised_gain = 0.0;
  int64_t num_vetoes = 0;

  double acceptance_rate() const {
    return num_draft_tokens > 0
               ? static_cast<double>(num_accepted_tokens) / static_cast<double>(num_draft_tokens)
               : 0.0;
  }
};

class SpeculationGate : public DraftSelector {
 public:
  // Drafts per request at most: num_speculative_tokens >= 1.
  SpeculationGate(int32_t num_speculative_tokens, bool cost_gating);

  // Drafts a request may be proposed in a step in which `num_decoding`
  // requests decode: num_speculative_tokens, or 0 when the step must run
  // plain to measure its size, or while proposing is backed off (the
  // latest proposals did not pay for themselves).
  int32_t drafts_for_step(int32_t num_decoding);
  void select(int32_t num_decoding, const ClassRecords& every_request,
              std::span<DraftCandidate> candidates) override;
  // A step that ran (after drafts_for_step() and select()).
  void observe(const GateObservation& step);
  const GateStats& stats() const { return stats_; }
  const StepCostModel& cost_model() const { return costs_; }
  // The probability that a request's next draft of class `match_class` is
  // accepted, from its record of that class and every request's records.
  static double acceptance_of(const AcceptanceRecord& record, int32_t match_class,
                              const ClassRecords& every_request);

  // Expected tokens per second must beat a plain step's by this much: a
  // tie is not worth the risk. Where every token costs about alike (a
  // compute-bound batch), the estimates of drafting steps measured 1.4-4.5%
  // low on the Zen 4 VM, and a batch whose requests drift out of step by
  // their accepted drafts mixes the next prompts into decode steps instead
  // of prefilling them together; at 3% the gate drafted on such gains at
  // 16 streams and ran 1-4% below plain decoding (docs/speculative.md,
  // "Margin").
  static constexpr double kMargin = 0.06;
  // Proposals go on while the best selection beats a step without
  // speculation by this much (see kMaxProposalBackoff), drafted or not: at
  // batch 1 a request's proposals after short matches pay less than
  // kMargin, and backing off on them lost the long matches that followed
  // (1.34x -> 1.19x on the edit workload).
  static constexpr double kProposalMargin = 0.03;
  // A plain step's size is measured again after this many recorded steps.
  static constexpr int64_t kRefreshSteps = 512;
  // A measurement of a size within B / kNearDivisor (at least 1) of B
  // stands for B's.
  static constexpr int32_t kNearDivisor = 8;
  // Weight, in steps, of a prior: every request's record of the class in
  // one request's estimate, and every request's record of all classes in
  // that of one class.
  static constexpr double kPriorWeight = 2.0;
  // Proposing drafts costs every step the drafter's time, drafted or not.
  // When the best selection does not beat a step without speculation (T(B)
  // with no proposals) by kProposalMargin, proposals stop for 1, 2, 4, ... up to
  // this many steps, so a workload whose drafts do not pay runs at the
  // speed of no speculation, and proposals resume to look again.
  static constexpr int32_t kMaxProposalBackoff = 32;
  // A step larger than every measured one has an extrapolated cost, and a
  // wrong guess costs the whole step (a compute-bound model's step of 80
  // tokens can cost 3x one of 16): drafts take a step at most this many
  // tokens (or B / 4) past the largest measured size, so the measured range
  // grows a few tokens at a time while drafting keeps paying.
  static constexpr int32_t kExploreTokens = 4;
  // Weight of a step in the moving average of the proposals' time.
  static constexpr double kProposalGain = 0.05;
  // The realised-gain check: plain steps kept per size, the age (in
  // decode-only steps, the ones timed) past which the newest forces a plain step while
  // drafting, drafting steps judged together, and the length of a veto.
  static constexpr int32_t kPlainWindow = 8;
  static constexpr int64_t kPlainRefreshSteps = 64;
  // While the latest window's gain is below kMarginalGain (or none is
  // known yet), a plain step runs every kMarginalPlainRefreshSteps instead:
  // where drafting barely pays, a machine whose speed drifts within a few
  // hundred steps can make a plain rate 64 steps old read as a loss or a
  // gain, and a current one is worth the few drafts it costs (at most
  // 1 / 9 of a gain under 10%, ~1% of throughput). On the made-up noisy
  // machine below, the worst of 30 seeds went from 0.974x to 0.987x.
  static constexpr double kMarginalGain = 1.1;
  static constexpr int64_t kMarginalPlainRefreshSteps = 8;
  static constexpr int32_t kGainWindow = 16;
  static constexpr int64_t kMinVetoSteps = 64;
  static constexpr int64_t kMaxVetoSteps = 2048;

  // Whether drafting at `num_decoding` is stopped by the realised-gain
  // check (false with gating off).
  bool is_vetoed(int32_t num_decoding) const;
  // The median realised gain of the latest window of kGainWindow drafting
  // steps at this size (0 before one is complete).
  double realised_gain(int32_t num_decoding) const;

 private:
  struct Worth {
    double expected_tokens;
    uint32_t candidate;
  };
  // One batch size's plain steps and drafting outcomes.
  struct Realised {
    std::array<double, kPlainWindow> plain_rate{};  // tokens per second
    std::array<int64_t, kPlainWindow> plain_step{};
    int32_t plain_next = 0;
    int32_t plain_count = 0;
    std::array<double, kGainWindow> gain{};
    int32_t gain_next = 0;
    int32_t gain_count = 0;
    int64_t veto_until = -1;  // an observed-step index
    int64_t veto_length = 0;
    double last_gain = 0.0;  // median of the latest full window
  };
  // The record standing for a batch size: its own, or the nearest within
  // B / kNearDivisor with a plain step (a size that is never decode-only
  // borrows its neighbour's); nullptr when none has one.
  const Realised* realised_near(int32_t num_decoding) const;
  Realised* realised_near(int32_t num_decoding);
  // Median tokens per second of a record's plain steps no older than
  // 4 x kPlainRefreshSteps (0 with fewer than 3).
  double plain_rate(const Realised& r) const;
  void record_realised(const GateObservation& step);

  int32_t num_speculative_tokens_;
  bool cost_gating_;
  StepCostModel costs_;
  GateStats stats_;
  int64_t num_observed_requests_ = 0;  // sum of num_decoding over observed steps
  int64_t num_observed_tokens_ = 0;    // tokens those steps produced
  // The latest selection's estimate, reported when its step is observed.
  double selected_cost_ratio_ = 0.0;
  double selected_yield_ = 0.0;
  double selected_expected_tokens_ = 0.0;  // B + the selected drafts' worth
  int64_t selected_num_drafts_ = 0;
  bool selected_is_estimated_ = false;  // its size was measured, not tried
  // The drafter's time per decoding request (moving average over steps
  // that proposed), and the proposal back-off: its current length and the
  // steps of it left.
  double proposal_seconds_per_request_ = 0.0;
  int32_t backoff_length_ = 0;
  int32_t backoff_left_ = 0;
  bool catching_up_ = false;        // the next proposals follow a back-off
  std::vector<Worth> worths_;       // scratch
  std::vector<Realised> realised_;  // by batch size
  int64_t num_steps_ = 0;           // observed decode-only steps
};

}  // namespace strata
