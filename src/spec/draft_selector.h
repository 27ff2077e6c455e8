// DraftSelector: decides how many of the drafts a drafter proposed each
// decoding request verifies in a step. The scheduler asks the drafter for
// up to num_speculative_tokens drafts per decoding request, then hands the
// proposals to the selector, which keeps a prefix of each (a later draft is
// accepted only if every earlier one was) and drops the rest before the
// step's token budget is spent on prompts. The speculation gate implements
// it by expected tokens per second on this machine (spec/speculation_gate).
//
// AcceptanceRecord is what is remembered of drafts: decayed counts of
// accepted drafts and of rejections (a step rejects at most one draft:
// verification stops there), from which a selector estimates how likely
// the next draft is to be accepted. Records are kept by match class (the
// length of the match of the request's latest tokens that the drafter found
// its proposal after: its evidence), per request and for every request
// together. On the demo model, drafts after a match of one token were
// accepted about half the time and after 16 or more about 97% of the time
// (docs/speculative.md, "Match classes"), so a request's proposals differ
// in worth from one step to the next. Drafts the selector dropped count
// too: the scheduler keeps one such proposal per request and compares it
// with the tokens the request goes on to produce (a sampled token equals a
// draft with the probability verification would have accepted it), so the
// records stay current while the request does not draft, at no compute
// cost.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace strata {

// Match classes: 1, 2-3, 4-7, 8-15 and 16 or more tokens (a length of 0, a
// drafter that reports none, is class 0).
inline constexpr int32_t kMatchClasses = 5;
inline int32_t match_class(int32_t match_length) {
  int32_t c = 0;
  while (c + 1 < kMatchClasses && match_length >= (2 << c)) ++c;
  return c;
}

struct AcceptanceRecord {
  // Per decode step of the request (a half-life of 34 steps): older steps
  // weigh less, so a request whose output moves into (or out of) text its
  // drafter predicts well is noticed within a hundred steps or so.
  static constexpr double kDecay = 0.98;
  double accepted = 0.0;  // accepted drafts
  double rejected = 0.0;  // steps whose drafts were not all accepted

  void decay(double factor = kDecay) {
    accepted *= factor;
    rejected *= factor;
  }
  // `num_drafts` drafts judged, the first `num_accepted` of them right.
  void add(int32_t num_drafts, int32_t num_accepted) {
    accepted += num_accepted;
    rejected += num_accepted < num_drafts ? 1.0 : 0.0;
  }
};

// One record per match class.
struct ClassRecords {
  // Every request's records decay per scheduled step (not per request), so
  // while nothing is proposed they fade in a few hundred steps and the
  // selector's prior returns to even odds: drafting is tried again.
  static constexpr double kEveryRequestDecay = 0.995;
  std::array<AcceptanceRecord, kMatchClasses> of{};

  void decay(double factor = AcceptanceRecord::kDecay) {
    for (AcceptanceRecord& r : of) r.decay(factor);
  }
  AcceptanceRecord total() const {
    AcceptanceRecord t;
    for (const AcceptanceRecord& r : of) {
      t.accepted += r.accepted;
      t.rejected += r.rejected;
    }
    return t;
  }
};

struct DraftCandidate {
  uint64_t request_id = 0;
  int32_t num_proposed = 0;  // drafts the drafter proposed (>= 1)
  int32_t match_class = 0;   // of the proposal
  AcceptanceRecord record;   // the request's history in that class
  int32_t num_selected = 0;  // out: how many of them the step verifies
};

class DraftSelector {
 public:
  virtual ~DraftSelector() = default;
  // `num_decoding` requests decode in the step (with or without proposals);
  // `every_request` is the records of all requests' drafts by class; sets
  // each candidate's num_selected in [0, num_proposed].
  virtual void select(int32_t num_decoding, const ClassRecords& every_request,
                      std::span<DraftCandidate> candidates) = 0;
};

}  // namespace strata
