// DraftSelector: decides how many of the drafts a drafter proposed each
// decoding request verifies in a step. The scheduler asks the drafter for
// up to num_speculative_tokens drafts per decoding request, then hands the
// proposals to the selector, which keeps a prefix of each (a later draft is
// accepted only if every earlier one was) and drops the rest before the
// step's token budget is spent on prompts. The speculation gate implements
// it by expected tokens per second on this machine (spec/speculation_gate).
//
// AcceptanceRecord is what a request remembers of its drafts: decayed
// counts of accepted drafts and of rejections (a step rejects at most one
// draft: verification stops there), from which a selector estimates how
// likely the request's next draft is to be accepted. Drafts the selector
// dropped count too: the scheduler keeps one such proposal per request and
// compares it with the tokens the request goes on to produce (a sampled
// token equals a draft with the probability verification would have
// accepted it), so the record stays current while the request does not
// draft, at no compute cost.
#pragma once

#include <cstdint>
#include <span>

namespace strata {

struct AcceptanceRecord {
  // Per decode step of the request (a half-life of 34 steps): older steps
  // weigh less, so a request whose output moves into (or out of) text its
  // drafter predicts well is noticed within a hundred steps or so.
  static constexpr double kDecay = 0.98;
  double accepted = 0.0;  // accepted drafts
  double rejected = 0.0;  // steps whose drafts were not all accepted

  // One decode step of the request.
  void decay() {
    accepted *= kDecay;
    rejected *= kDecay;
  }
  // `num_drafts` drafts judged, the first `num_accepted` of them right.
  void add(int32_t num_drafts, int32_t num_accepted) {
    accepted += num_accepted;
    rejected += num_accepted < num_drafts ? 1.0 : 0.0;
  }
  // A decode step that verified `num_drafts` (0: none).
  void observe(int32_t num_drafts, int32_t num_accepted) {
    decay();
    add(num_drafts, num_accepted);
  }
};

struct DraftCandidate {
  uint64_t request_id = 0;
  int32_t num_proposed = 0;  // drafts the drafter proposed (>= 1)
  AcceptanceRecord record;   // the request's history
  int32_t num_selected = 0;  // out: how many of them the step verifies
};

class DraftSelector {
 public:
  virtual ~DraftSelector() = default;
  // `num_decoding` requests decode in the step (with or without proposals);
  // sets each candidate's num_selected in [0, num_proposed].
  virtual void select(int32_t num_decoding, std::span<DraftCandidate> candidates) = 0;
};

}  // namespace strata
