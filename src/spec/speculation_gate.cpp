#include "spec/speculation_gate.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace strata {

SpeculationGate::SpeculationGate(int32_t num_speculative_tokens, bool cost_gating)
    : num_speculative_tokens_(num_speculative_tokens), cost_gating_(cost_gating) {}

double SpeculationGate::acceptance_of(const AcceptanceRecord& record, int32_t match_class,
                                      const ClassRecords& every_request) {
  // Every request's rate over all classes, with one accepted and one
  // rejected draft of prior (0.5 before anything is known); then the
  // class's, then the request's, each pulled towards the one before.
  const auto pulled = [](const AcceptanceRecord& r, double prior, double weight) {
    return (r.accepted + weight * prior) / (r.accepted + r.rejected + weight);
  };
  const double all = pulled(every_request.total(), 0.5, 2.0);
  const double cls =
      pulled(every_request.of[static_cast<size_t>(std::clamp(match_class, 0, kMatchClasses - 1))],
             all, kPriorWeight);
  return pulled(record, cls, kPriorWeight);
}

int32_t SpeculationGate::drafts_for_step(int32_t num_decoding) {
  if (!cost_gating_) return num_speculative_tokens_;
  if (backoff_left_ > 0) {
    if (--backoff_left_ == 0) catching_up_ = true;
    return 0;
  }
  // T(B) needs a recent measurement of B or of a size next to it (the
  // model interpolates between, or extends the slope below, its points). A
  // size that is never decode-only (15 requests decode while a 16th's
  // prompt arrives) is never timed itself, and must not run plain for it.
  const int32_t b = std::max(1, num_decoding);
  const int32_t near = std::max(1, b / kNearDivisor);
  bool is_measured = false;
  for (int32_t n = std::max(1, b - near); n <= b + near && !is_measured; ++n) {
    const int64_t newest = costs_.newest_sample(n);
    is_measured = newest >= 0 && costs_.num_recorded() - newest <= kRefreshSteps;
  }
  if (!is_measured || is_vetoed(b)) return 0;
  // The realised-gain check needs a current plain rate: while drafting,
  // every kPlainRefreshSteps a step runs plain, every
  // kMarginalPlainRefreshSteps while the latest gain is marginal.
  const Realised* r = realised_near(b);
  if (r == nullptr) return 0;
  int64_t newest_plain = -1;
  for (int32_t i = 0; i < r->plain_count; ++i) {
    newest_plain = std::max(newest_plain, r->plain_step[static_cast<size_t>(i)]);
  }
  const int64_t refresh =
      r->last_gain < kMarginalGain ? kMarginalPlainRefreshSteps : kPlainRefreshSteps;
  return num_steps_ - newest_plain <= refresh ? num_speculative_tokens_ : 0;
}

const SpeculationGate::Realised* SpeculationGate::realised_near(int32_t num_decoding) const {
  const int32_t b = std::max(1, num_decoding);
  const int32_t near = std::max(1, b / kNearDivisor);
  const auto has_plain = [this](int32_t n) {
    return n >= 1 && static_cast<size_t>(n) < realised_.size() &&
           realised_[static_cast<size_t>(n)].plain_count > 0;
  };
  if (has_plain(b)) return &realised_[static_cast<size_t>(b)];
  for (int32_t d = 1; d <= near; ++d) {
    if (has_plain(b - d)) return &realised_[static_cast<size_t>(b - d)];
    if (has_plain(b + d)) return &realised_[static_cast<size_t>(b + d)];
  }
  return nullptr;
}

SpeculationGate::Realised* SpeculationGate::realised_near(int32_t num_decoding) {
  return const_cast<Realised*>(std::as_const(*this).realised_near(num_decoding));
}

double SpeculationGate::plain_rate(const Realised& r) const {
  std::array<double, kPlainWindow> live{};
  size_t count = 0;
  for (int32_t i = 0; i < r.plain_count; ++i) {
    if (num_steps_ - r.plain_step[static_cast<size_t>(i)] <= 4 * kPlainRefreshSteps) {
      live[count++] = r.plain_rate[static_cast<size_t>(i)];
    }
  }
  if (count < 3) return 0.0;
  for (size_t i = 1; i < count; ++i) {  // insertion sort: at most kPlainWindow
    for (size_t j = i; j > 0 && live[j - 1] > live[j]; --j) std::swap(live[j - 1], live[j]);
  }
  return count % 2 == 1 ? live[count / 2] : 0.5 * (live[count / 2 - 1] + live[count / 2]);
}

bool SpeculationGate::is_vetoed(int32_t num_decoding) const {
  if (!cost_gating_) return false;
  const Realised* r = realised_near(num_decoding);
  return r != nullptr && num_steps_ < r->veto_until;
}

double SpeculationGate::realised_gain(int32_t num_decoding) const {
  const Realised* r = realised_near(num_decoding);
  return r == nullptr ? 0.0 : r->last_gain;
}

void SpeculationGate::record_realised(const GateObservation& step) {
  if (!cost_gating_ || !step.is_decode_only) return;
  ++num_steps_;
  if (step.seconds <= 0.0) return;
  const int32_t b = step.num_decoding;
  if (step.num_draft_tokens == 0) {
    // What the step would have cost without speculation: no proposals.
    const double seconds = step.seconds - step.proposal_seconds;
    if (seconds <= 0.0) return;
    if (realised_.size() <= static_cast<size_t>(b)) realised_.resize(static_cast<size_t>(b) + 1);
    Realised& r = realised_[static_cast<size_t>(b)];
    r.plain_rate[static_cast<size_t>(r.plain_next)] = b / seconds;
    r.plain_step[static_cast<size_t>(r.plain_next)] = num_steps_;
    r.plain_next = (r.plain_next + 1) % kPlainWindow;
    r.plain_count = std::min(r.plain_count + 1, kPlainWindow);
    return;
  }
  Realised* r = realised_near(b);
  if (r == nullptr) return;
  const double plain = plain_rate(*r);
  if (plain <= 0.0) return;
  // The drafting step against no speculation, proposals included, at the
  // tokens the selection expected: this checks the costs the gate chose by
  // (a request whose drafts fail is its own record's business, and must
  // not stop the drafts of the next). When the step is not the latest
  // selection's (pipelined plans), its accepted drafts stand in. A step of
  // a size not yet measured was a try, not an estimate: it is not judged.
  const bool is_selection = selected_num_drafts_ == step.num_draft_tokens;
  if (is_selection && !selected_is_estimated_) return;
  const double tokens = is_selection && selected_expected_tokens_ > 0.0
                            ? selected_expected_tokens_
                            : static_cast<double>(b + step.num_accepted);
  r->gain[static_cast<size_t>(r->gain_next)] = tokens / step.seconds / plain;
  r->gain_next = (r->gain_next + 1) % kGainWindow;
  r->gain_count = std::min(r->gain_count + 1, kGainWindow);
  if (r->gain_count < kGainWindow) return;
  // A full window is judged once (windows do not overlap: judging every
  // step would test the same noise sixteen times).
  std::array<double, kGainWindow> g = r->gain;
  std::nth_element(g.begin(), g.begin() + kGainWindow / 2, g.end());
  const double median = g[kGainWindow / 2];
  r->last_gain = median;
  r->gain_count = 0;
  r->gain_next = 0;
  stats_.realised_gain = median;
  if (median < 1.0) {
    ++stats_.num_vetoes;
    r->veto_length = std::clamp(r->veto_length * 2, kMinVetoSteps, kMaxVetoSteps);
    r->veto_until = num_steps_ + r->veto_length;
  } else if (median >= 1.0 + kMargin) {
    // Only a clear gain forgives earlier losses; a size whose gains sit
    // near 1 keeps its back-off growing, and is tried ever less often.
    r->veto_length = 0;
  }
}

void SpeculationGate::select(int32_t num_decoding, const ClassRecords& every_request,
                             std::span<DraftCandidate> candidates) {
  selected_cost_ratio_ = 0.0;
  selected_yield_ = 0.0;
  selected_expected_tokens_ = 0.0;
  selected_num_drafts_ = 0;
  selected_is_estimated_ = false;
  if (!cost_gating_) {
    for (DraftCandidate& c : candidates) c.num_selected = c.num_proposed;
    return;
  }
  for (DraftCandidate& c : candidates) c.num_selected = 0;
  const int32_t b = std::max(1, num_decoding);
  const double plain = costs_.estimate(b);
  if (plain <= 0.0 || is_vetoed(b)) return;
  // Every proposed draft's worth: a^i for the i-th of a request.
  worths_.clear();
  for (uint32_t i = 0; i < candidates.size(); ++i) {
    const double a = acceptance_of(candidates[i].record, candidates[i].match_class, every_request);
    double worth = 1.0;
    for (int32_t j = 0; j < candidates[i].num_proposed; ++j) {
      worth *= a;
      worths_.push_back({worth, i});
    }
  }
  // Best first; a request's drafts are in order (a <= 1), so any prefix of
  // this order keeps a prefix of each request's drafts.
  std::stable_sort(worths_.begin(), worths_.end(), [](const Worth& x, const Worth& y) {
    return x.expected_tokens > y.expected_tokens;
  });
  // This step's proposals are made: a plain step now costs T(B) plus them,
  // and so does every choice of D.
  const double proposing = proposal_seconds_per_request_ * b;
  const double plain_rate = b / (plain + proposing);
  double best_rate = plain_rate;
  size_t best = 0;
  double expected = b;
  double best_cost = plain;
  double best_expected = b;
  const int32_t reach = costs_.largest_measured() + std::max(kExploreTokens, b / 4);
  for (size_t d = 1; d <= worths_.size() && b + static_cast<int32_t>(d) <= reach; ++d) {
    expected += worths_[d - 1].expected_tokens;
    const double cost = costs_.estimate(b + static_cast<int32_t>(d));
    if (cost <= 0.0) break;
    const double rate = expected / (cost + proposing);
    if (rate > best_rate) {
      best_rate = rate;
      best = d;
      best_cost = cost;
      best_expected = expected;
    }
  }
  // Whether proposing pays at all: the best choice against a step without
  // speculation. If not, stop proposing for a while (doubling each time).
  if (best_rate > (b / plain) * (1.0 + kProposalMargin)) {
    backoff_length_ = 0;
  } else {
    backoff_length_ = std::clamp(backoff_length_ * 2, 1, kMaxProposalBackoff);
    backoff_left_ = backoff_length_;
  }
  // Whether drafting pays by more than the estimates' error.
  if (best == 0 || best_rate <= plain_rate * (1.0 + kMargin)) return;
  for (size_t d = 0; d < best; ++d) ++candidates[worths_[d].candidate].num_selected;
  selected_cost_ratio_ = best_cost / plain;
  selected_yield_ = best_rate * best_cost / b;
  selected_expected_tokens_ = best_expected;
  selected_num_drafts_ = static_cast<int64_t>(best);
  selected_is_estimated_ = costs_.is_measured(b + static_cast<int32_t>(best));
}

void SpeculationGate::observe(const GateObservation& step) {
  if (step.num_decoding <= 0) return;
  record_realised(step);
  const int64_t produced = step.num_decoding + step.num_accepted;
  num_observed_requests_ += step.num_decoding;
  num_observed_tokens_ += produced;
  stats_.tokens_per_step =
      static_cast<double>(num_observed_tokens_) / static_cast<double>(num_observed_requests_);
  stats_.is_drafting = step.num_draft_tokens > 0;
  if (step.num_draft_tokens > 0) {
    ++stats_.num_draft_steps;
    stats_.num_draft_tokens += step.num_draft_tokens;
    stats_.num_accepted_tokens += step.num_accepted;
    if (selected_cost_ratio_ > 0.0) {
      stats_.cost_ratio = selected_cost_ratio_;
      stats_.draft_yield = selected_yield_;
    }
  } else {
    ++stats_.num_plain_steps;
  }
  selected_cost_ratio_ = 0.0;
  selected_yield_ = 0.0;
  selected_expected_tokens_ = 0.0;
  selected_num_drafts_ = 0;
  selected_is_estimated_ = false;
  // The first proposals after a back-off also catch the drafter up with
  // the tokens of the steps without: not what proposing costs a step.
  if (step.proposal_seconds > 0.0 && !std::exchange(catching_up_, false)) {
    const double per_request = step.proposal_seconds / step.num_decoding;
    proposal_seconds_per_request_ =
        proposal_seconds_per_request_ > 0.0
            ? proposal_seconds_per_request_ * (1.0 - kProposalGain) + per_request * kProposalGain
            : per_request;
  }
  if (!step.is_decode_only) return;
  costs_.record(
      static_cast<int32_t>(std::min<int64_t>(step.num_decoding + step.num_draft_tokens, INT32_MAX)),
      std::max(0.0, step.seconds - step.proposal_seconds));
}

}  // namespace strata
