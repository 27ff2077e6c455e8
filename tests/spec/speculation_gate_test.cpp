#include "spec/speculation_gate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

namespace strata {
namespace {

// A made-up machine and workload: a decode-only step of n tokens takes
// cost(n) seconds; request i's drafts are each accepted with probability
// alpha[i] (in order: the first rejection ends them); every request is
// proposed `k` drafts a step (when the gate allows any), of match class 0.
// With `class_of` set, each proposal's class is drawn from it and its
// drafts are accepted with probability class_alpha[class] instead (and
// with report_classes false, the gate is told class 0 for all). The
// records are kept as the scheduler keeps them: per request and for every
// request, by reported class; a request whose proposal was dropped learns from it
// as the scheduler's shadow does (here at once, not over the next steps).
struct Sim {
  Sim(std::function<double(int32_t)> cost_of, std::vector<double> alphas, int32_t drafts)
      : cost(std::move(cost_of)), alpha(std::move(alphas)), k(drafts) {}
  std::function<double(int32_t)> cost;
  std::vector<double> alpha;
  int32_t k;
  // What proposing costs a step, per decoding request (the drafter's time).
  double proposal_per_request = 0.0;
  // A shared machine: each step's time is multiplied by a lognormal noise
  // exp(N(0, noise_sigma)) and a slow drift 1 + drift_amplitude x
  // sin(2 pi step / drift_period).
  double noise_sigma = 0.0;
  double drift_amplitude = 0.0;
  int32_t drift_period = 300;
  std::mt19937 rng{7};
  std::function<int32_t(std::mt19937&)> class_of;
  std::array<double, kMatchClasses> class_alpha{};
  bool report_classes = true;
  std::vector<ClassRecords> records;
  ClassRecords every_request;

  struct Totals {
    int64_t steps = 0;
    int64_t drafting_steps = 0;
    int64_t proposing_steps = 0;
    int32_t largest_step = 0;  // tokens
    int64_t draft_tokens = 0;
    double tokens = 0.0;
    double seconds = 0.0;
    // What the same steps would have taken without speculation (the same
    // noise and drift): batch / plain_seconds per step is plain decoding's
    // rate on this run's machine.
    double plain_seconds = 0.0;
    std::vector<int64_t> drafts_of;  // per request
    double tokens_per_second() const { return tokens / seconds; }
    // Tokens per second against plain decoding on the same steps.
    double speedup(int32_t batch) const {
      return tokens_per_second() / (static_cast<double>(batch * steps) / plain_seconds);
    }
  };

  Totals run(SpeculationGate& gate, int steps) {
    const auto batch = static_cast<int32_t>(alpha.size());
    records.resize(alpha.size());
    Totals t;
    t.drafts_of.assign(alpha.size(), 0);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int s = 0; s < steps; ++s) {
      const int32_t max_drafts = gate.drafts_for_step(batch);
      every_request.decay(ClassRecords::kEveryRequestDecay);
      std::vector<DraftCandidate> candidates;
      std::vector<int32_t> classes(static_cast<size_t>(batch), 0);
      if (max_drafts > 0) {
        for (int32_t i = 0; i < batch; ++i) {
          DraftCandidate c;
          c.request_id = static_cast<uint64_t>(i);
          c.num_proposed = std::min(k, max_drafts);
          if (class_of) classes[static_cast<size_t>(i)] = class_of(rng);
          c.match_class = report_classes ? classes[static_cast<size_t>(i)] : 0;
          c.record = records[static_cast<size_t>(i)].of[static_cast<size_t>(c.match_class)];
          candidates.push_back(c);
        }
        gate.select(batch, every_request, candidates);
      }
      GateObservation o;
      o.num_decoding = batch;
      for (int32_t i = 0; i < batch; ++i) {
        const int32_t drafts =
            candidates.empty() ? 0 : candidates[static_cast<size_t>(i)].num_selected;
        const int32_t proposed = candidates.empty() ? 0 : k;
        const int32_t truth = classes[static_cast<size_t>(i)];
        const int32_t cls = report_classes ? truth : 0;
        const double a =
            class_of ? class_alpha[static_cast<size_t>(truth)] : alpha[static_cast<size_t>(i)];
        int32_t accepted = 0;
        while (accepted < proposed && u(rng) < a) ++accepted;
        ClassRecords& record = records[static_cast<size_t>(i)];
        record.decay();
        const int32_t judged = drafts > 0 ? drafts : proposed;  // verified, or the shadow
        if (judged > 0) {
          accepted = std::min(accepted, judged);
          record.of[static_cast<size_t>(cls)].add(judged, accepted);
          every_request.of[static_cast<size_t>(cls)].add(judged, accepted);
        }
        if (drafts == 0) accepted = 0;
        o.num_draft_tokens += drafts;
        o.num_accepted += accepted;
        t.drafts_of[static_cast<size_t>(i)] += drafts;
      }
      std::normal_distribution<double> noise(0.0, noise_sigma);
      const double machine =
          (1.0 + drift_amplitude * std::sin(2.0 * std::numbers::pi * (s + 0.5) / drift_period)) *
          std::exp(noise(rng));
      o.seconds = cost(batch + static_cast<int32_t>(o.num_draft_tokens)) * machine;
      t.plain_seconds += cost(batch) * machine;
      t.largest_step = std::max(t.largest_step, batch + static_cast<int32_t>(o.num_draft_tokens));
      if (max_drafts > 0) {
        o.proposal_seconds = proposal_per_request * batch;
        o.seconds += o.proposal_seconds;
        ++t.proposing_steps;
      }
      gate.observe(o);
      ++t.steps;
      t.drafting_steps += o.num_draft_tokens > 0 ? 1 : 0;
      t.draft_tokens += o.num_draft_tokens;
      t.tokens += static_cast<double>(batch + o.num_accepted);
      t.seconds += o.seconds;
    }
    return t;
  }
};

// Plain decoding on the same machine: tokens per second.
double plain_rate(const Sim& sim) {
  const auto batch = static_cast<int32_t>(sim.alpha.size());
  return batch / sim.cost(batch);
}

TEST(SpeculationGate, VerifiesLongDraftsWhenATokenMoreCostsLittle) {
  // Batch 1, bandwidth-bound: 9 tokens cost 1.16x one.
  Sim sim([](int32_t n) { return 1.0 + 0.02 * (n - 1); }, {0.85}, 8);
  SpeculationGate gate(8, true);
  const Sim::Totals t = sim.run(gate, 400);
  // All but the first steps (which measure a plain step) and one in
  // kPlainRefreshSteps (which keeps the plain rate current).
  EXPECT_GE(t.drafting_steps, 390);
  EXPECT_GT(static_cast<double>(t.draft_tokens) / t.drafting_steps, 7.5);
  // (1 - 0.85^9) / 0.15 = 5.1 tokens a step for 1.16x.
  EXPECT_GT(t.tokens_per_second() / plain_rate(sim), 3.5);
  EXPECT_TRUE(gate.stats().is_drafting);
  EXPECT_NEAR(gate.stats().cost_ratio, 1.16, 1e-9);  // 9 tokens against 1
  // Accepted over verified: 0.85 (1 - 0.85^8) / 0.15 of 8.
  EXPECT_NEAR(gate.stats().acceptance_rate(), 0.515, 0.03);
}

TEST(SpeculationGate, TriesThenNeverDraftsWhereEveryTokenCostsAlike) {
  // A compute-bound batch: a step's cost is proportional to its tokens, so
  // no draft can pay, however likely.
  Sim sim([](int32_t n) { return 0.01 * n; }, std::vector<double>(16, 0.9), 4);
  SpeculationGate gate(4, true);
  const Sim::Totals t = sim.run(gate, 600);
  // The steps that measured a drafting size, no more.
  EXPECT_EQ(t.drafting_steps, StepCostModel::kMinSamples);
  EXPECT_GE(t.tokens_per_second() / plain_rate(sim), 0.99);
  EXPECT_FALSE(gate.stats().is_drafting);
}

TEST(SpeculationGate, KeepsOnlyTheDraftsLikelyToPayAtALargeBatch) {
  // 16 requests; an extra token costs 4% of a plain step; half the
  // requests copy text (drafts accepted 95%), half do not (5%).
  std::vector<double> alpha;
  for (int i = 0; i < 16; ++i) alpha.push_back(i % 2 == 0 ? 0.95 : 0.05);
  Sim sim([](int32_t n) { return 1.0 + 0.04 * n; }, alpha, 4);
  SpeculationGate gate(4, true);
  sim.run(gate, 100);  // learn
  const Sim::Totals t = sim.run(gate, 400);
  int64_t likely = 0, unlikely = 0;
  for (size_t i = 0; i < alpha.size(); ++i) (i % 2 == 0 ? likely : unlikely) += t.drafts_of[i];
  EXPECT_GT(likely, 8 * 400 * 3);  // most steps draft 3-4 for each copying request
  EXPECT_LT(unlikely, likely / 20);
  EXPECT_GT(t.tokens_per_second() / plain_rate(sim), 1.4);
}

TEST(SpeculationGate, StopsProposingWhenDraftsDoNotPayForTheProposals) {
  // 16 requests whose drafts are accepted half the time; a token more
  // costs 4% of a step's base. Without proposal costs one draft each pays:
  // 24 tokens for 2.28 against 16 for 1.64, 1.08x.
  const auto cost = [](int32_t n) { return 1.0 + 0.04 * n; };
  Sim free_proposals(cost, std::vector<double>(16, 0.5), 4);
  SpeculationGate g1(4, true);
  free_proposals.run(g1, 100);
  const Sim::Totals t1 = free_proposals.run(g1, 400);
  // A gain under kMarginalGain: one step in 9 runs plain, for a current
  // reference.
  EXPECT_GT(t1.drafting_steps, 340);
  EXPECT_GT(t1.tokens_per_second() / plain_rate(free_proposals), 1.04);
  // Proposing costs 0.4 a step: drafting then beats a plain step that
  // proposed (16 / 2.04) but not one without speculation (16 / 1.64), so
  // the gate stops proposing and runs at the speed of no speculation
  // (drafting on every step would give 0.92x of it).
  Sim paid_proposals(cost, std::vector<double>(16, 0.5), 4);
  paid_proposals.proposal_per_request = 0.025;
  SpeculationGate g2(4, true);
  paid_proposals.run(g2, 100);
  const Sim::Totals t2 = paid_proposals.run(g2, 400);
  EXPECT_LT(t2.proposing_steps, 40);
  EXPECT_GE(t2.tokens_per_second() / plain_rate(paid_proposals), 0.97);
}

TEST(SpeculationGate, DoesNotDraftForAGainWithinItsEstimatesError) {
  // 16 requests copying text (drafts accepted 95%); a step of n tokens
  // costs 0.25 + 0.09 n. The best drafting step (32 drafts) would yield
  // 1.055x a plain step's tokens per second, 8 drafts 1.034x: gains the
  // size of the cost model's error where every token costs nearly alike
  // (its estimates of drafting steps ran 1.4-4.5% low at 16 streams on the
  // Zen 4 VM), so nothing is verified beyond the tries that measure a
  // size. Such gains still beat kProposalMargin: proposals go on, and the
  // records stay current for when drafts pay more.
  Sim sim([](int32_t n) { return 0.25 + 0.09 * n; }, std::vector<double>(16, 0.95), 4);
  SpeculationGate gate(4, true);
  const Sim::Totals t = sim.run(gate, 600);
  EXPECT_EQ(t.drafting_steps, StepCostModel::kMinSamples);
  EXPECT_GT(t.proposing_steps, 590);
  EXPECT_GE(t.tokens_per_second() / plain_rate(sim), 0.99);
  EXPECT_FALSE(gate.stats().is_drafting);
}

TEST(SpeculationGate, TriesLargerStepsAFewTokensAtATime) {
  // 16 requests copying text (drafts accepted 90%) on a machine where a
  // step is cheap up to 20 tokens and then turns compute-bound: every token
  // past 20 costs half a plain step. Extrapolating the small steps' slope
  // would promise 80-token steps at 1.6x plain and run them at 23x; the
  // gate grows the measured range from 16 a few tokens at a time instead,
  // and keeps to the sizes that pay.
  const auto cost = [](int32_t n) { return 1.0 + 0.02 * n + 0.5 * std::max(0, n - 20); };
  Sim sim(cost, std::vector<double>(16, 0.9), 4);
  SpeculationGate gate(4, true);
  const Sim::Totals t = sim.run(gate, 500);
  EXPECT_LE(t.largest_step, 16 + 2 * SpeculationGate::kExploreTokens);
  EXPECT_GT(t.drafting_steps, 400);
  EXPECT_GT(t.tokens_per_second() / plain_rate(sim), 1.1);
}

TEST(SpeculationGate, StopsDraftingWhereDraftingStepsProveSlowerOnANoisyMachine) {
  // 16 requests copying text (drafts accepted 90%) on a compute-bound
  // machine: a step's cost grows a little faster than its tokens, so no
  // draft pays; each step's time has 20% noise and a 30% drift. The cost
  // model's estimates come from samples of different sizes taken at
  // different moments, and on some runs (seeds) they put T(B + D) / T(B) a
  // little too low, so that most steps drafted at a loss: without the
  // realised-gain check, 4 of the first 12 seeds drafted on 740-2,200 steps
  // of 3,000 and 3 ran at 0.95-0.98x of plain decoding. Measured outcomes
  // stop that: every run keeps within 2% of plain (with a plain reference
  // 64 steps old, the worst of these 30 seeds ran at 0.974x; refreshed
  // every 8 steps while the gain is marginal, 0.987x).
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    const auto cost = [](int32_t n) { return 0.09 * n * (1.0 + 0.005 * (n - 16)); };
    Sim sim(cost, std::vector<double>(16, 0.9), 4);
    sim.noise_sigma = 0.2;
    sim.drift_amplitude = 0.3;
    sim.drift_period = 100;
    sim.rng.seed(seed);
    SpeculationGate gate(4, true);
    const Sim::Totals t = sim.run(gate, 3000);
    EXPECT_GE(t.speedup(16), 0.98) << "seed " << seed << ", drafting steps " << t.drafting_steps;
    EXPECT_LT(t.drafting_steps, 600) << "seed " << seed;
  }
}

TEST(SpeculationGate, ARequestWhoseDraftsFailDoesNotStopTheNextOnesDrafts) {
  // Batch 1, bandwidth-bound. A request that copies, one whose drafts all
  // fail, then another that copies: the failing one's record stops its own
  // drafts; the realised-gain check judges the costs (at the tokens each
  // selection expected), which were right, so nothing is vetoed and the
  // third request drafts at once.
  Sim sim([](int32_t n) { return 1.0 + 0.02 * (n - 1); }, {0.9}, 4);
  SpeculationGate gate(4, true);
  sim.run(gate, 300);
  sim.alpha = {0.0};
  sim.records.assign(1, ClassRecords{});
  sim.run(gate, 300);
  sim.alpha = {0.9};
  sim.records.assign(1, ClassRecords{});
  const Sim::Totals t = sim.run(gate, 100);
  EXPECT_EQ(gate.stats().num_vetoes, 0);
  EXPECT_GT(t.drafting_steps, 90);
}

TEST(SpeculationGate, ARealisedLossStopsDraftingAtThatSizeForAWhile) {
  SpeculationGate gate(4, true);
  // Plain steps of 16: 16 tokens a second.
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(gate.drafts_for_step(16), i < StepCostModel::kMinSamples ? 0 : 4);
    gate.observe({16, 0, 0, 1.0});
  }
  // Drafting steps whose 4 accepted drafts take 1.5 s: 13.3 tokens a second.
  for (int i = 0; i < SpeculationGate::kGainWindow - 1; ++i) {
    gate.observe({16, 4, 4, 1.5});
    ASSERT_FALSE(gate.is_vetoed(16));
  }
  gate.observe({16, 4, 4, 1.5});
  EXPECT_TRUE(gate.is_vetoed(16));
  EXPECT_TRUE(gate.is_vetoed(15));   // a neighbour stands for it
  EXPECT_FALSE(gate.is_vetoed(24));  // another size is judged by its own steps
  EXPECT_EQ(gate.drafts_for_step(16), 0);
  std::vector<DraftCandidate> c(16);
  for (DraftCandidate& x : c) x.num_proposed = 4;
  gate.select(16, ClassRecords{}, c);
  for (const DraftCandidate& x : c) EXPECT_EQ(x.num_selected, 0);
  // Steps that did not draft count the veto down; then drafting is tried again.
  for (int64_t i = 0; i < SpeculationGate::kMinVetoSteps; ++i) {
    ASSERT_TRUE(gate.is_vetoed(16));
    gate.observe({16, 0, 0, 1.0});
  }
  EXPECT_FALSE(gate.is_vetoed(16));
  EXPECT_EQ(gate.drafts_for_step(16), 4);
  // A second loss stops it for twice as long.
  for (int i = 0; i < SpeculationGate::kGainWindow; ++i) gate.observe({16, 4, 4, 1.5});
  for (int64_t i = 0; i < 2 * SpeculationGate::kMinVetoSteps; ++i) {
    ASSERT_TRUE(gate.is_vetoed(16)) << i;
    gate.observe({16, 0, 0, 1.0});
  }
  EXPECT_FALSE(gate.is_vetoed(16));
  // Drafting steps that pay (20 tokens in 1.1 s) keep drafting on, and
  // reset the back-off.
  for (int i = 0; i < 3 * SpeculationGate::kGainWindow; ++i) {
    gate.observe({16, 4, 4, 1.1});
    ASSERT_FALSE(gate.is_vetoed(16));
  }
  EXPECT_NEAR(gate.realised_gain(16), 20.0 / 1.1 / 16.0, 1e-9);
  // Without a plain step for kPlainRefreshSteps, a step runs plain.
  for (int64_t i = 0; i < SpeculationGate::kPlainRefreshSteps; ++i) gate.observe({16, 4, 4, 1.1});
  EXPECT_EQ(gate.drafts_for_step(16), 0);
  gate.observe({16, 0, 0, 1.0});
  EXPECT_EQ(gate.drafts_for_step(16), 4);
}

TEST(SpeculationGate, AMarginalGainKeepsItsPlainReferenceCurrent) {
  SpeculationGate gate(4, true);
  for (int i = 0; i < 8; ++i) gate.observe({16, 0, 0, 1.0});  // 16 tokens a second
  // Drafting steps yielding `gain` x plain: 20 tokens in 20 / 16 / gain s.
  const auto draft = [&](double gain) { gate.observe({16, 4, 4, 20.0 / 16.0 / gain}); };
  // Drafting steps until the gate asks for a plain step (when the latest
  // is older than the refresh interval), then that plain step; returns how
  // many drafting steps there were (the interval, or one more).
  const auto drafting_run = [&](double gain) {
    int64_t n = 0;
    while (gate.drafts_for_step(16) > 0 && n < 1000) {
      draft(gain);
      ++n;
    }
    gate.observe({16, 0, 0, 1.0});
    return n;
  };
  // No window judged yet: a plain step every kMarginalPlainRefreshSteps.
  const auto near = [](int64_t n, int64_t interval) { return n >= interval && n <= interval + 1; };
  EXPECT_PRED2(near, drafting_run(1.05), SpeculationGate::kMarginalPlainRefreshSteps);
  // Windows of 1.05x: marginal, so still.
  for (int i = 0; i < 6; ++i) drafting_run(1.05);
  EXPECT_NEAR(gate.realised_gain(16), 1.05, 1e-9);
  EXPECT_PRED2(near, drafting_run(1.05), SpeculationGate::kMarginalPlainRefreshSteps);
  // A clear gain (1.5x) relaxes it to kPlainRefreshSteps.
  for (int i = 0; i < 4; ++i) drafting_run(1.5);
  EXPECT_NEAR(gate.realised_gain(16), 1.5, 1e-9);
  EXPECT_PRED2(near, drafting_run(1.5), SpeculationGate::kPlainRefreshSteps);
}

TEST(SpeculationGate, StopsWhenDraftsAreRejectedAndTriesAgainLater) {
  Sim sim([](int32_t n) { return 1.0 + 0.1 * (n - 1); }, {0.0}, 4);
  SpeculationGate gate(4, true);
  const Sim::Totals off = sim.run(gate, 1000);
  // Tries, learns, and from then on drafts only when the faded record says
  // it might pay again: a few steps in a thousand.
  EXPECT_LE(off.drafting_steps, 30);
  EXPECT_GE(off.tokens_per_second() / plain_rate(sim), 0.97);
  // The request starts copying: a later try sees it and drafting resumes.
  sim.alpha = {0.9};
  const Sim::Totals on = sim.run(gate, 600);
  EXPECT_GT(on.drafting_steps, 400);
  EXPECT_TRUE(gate.stats().is_drafting);
}

TEST(SpeculationGate, MeasuresAPlainStepOfEachSizeAndAgainAfterAWhile) {
  SpeculationGate gate(4, true);
  EXPECT_EQ(gate.drafts_for_step(3), 0);  // size 3 never measured
  for (int i = 0; i < StepCostModel::kMinSamples; ++i) {
    EXPECT_EQ(gate.drafts_for_step(3), 0);
    gate.observe({3, 0, 0, 1.0});
  }
  EXPECT_EQ(gate.drafts_for_step(3), 4);
  // A neighbouring size stands for a size (within B / 8, at least 1).
  EXPECT_EQ(gate.drafts_for_step(2), 4);
  EXPECT_EQ(gate.drafts_for_step(4), 4);
  EXPECT_EQ(gate.drafts_for_step(5), 0);
  for (int64_t i = 0; i < SpeculationGate::kRefreshSteps; ++i) gate.observe({7, 0, 0, 1.0});
  EXPECT_EQ(gate.drafts_for_step(3), 0);  // stale
  // A step with a prompt chunk is not timed: it measures nothing.
  gate.observe({3, 0, 0, 1.0, false});
  EXPECT_EQ(gate.drafts_for_step(3), 0);
}

// 15 requests decode only while a 16th's prompt is prefilled, so a step of
// 15 is never timed; it drafts on the measurements of 16 and of the
// drafting steps, with T(15) taken from the slope below them.
TEST(SpeculationGate, ASizeThatIsNeverDecodeOnlyStillDrafts) {
  Sim sim([](int32_t n) { return 0.5 + 0.02 * n; }, std::vector<double>(16, 0.95), 4);
  SpeculationGate gate(4, true);
  // Fewer steps than kPlainRefreshSteps: the plain rate of 16 measured at
  // the start is still current for the steps of 15 below.
  sim.run(gate, 60);
  // One token less than 16: 0.02 s less (the flat extension gave T(16)).
  const StepCostModel& m = gate.cost_model();
  EXPECT_NEAR(m.estimate(16) - m.estimate(15), 0.02, 0.004);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(gate.drafts_for_step(15), 4);
    gate.observe({15, 0, 0, 1.0, false});  // with a prompt chunk: not timed
  }
  std::vector<DraftCandidate> c(15);
  AcceptanceRecord good;
  for (int i = 0; i < 40; ++i) {
    good.decay();
    good.add(4, 4);
  }
  for (DraftCandidate& x : c) {
    x.num_proposed = 4;
    x.record = good;
  }
  gate.select(15, ClassRecords{}, c);
  int32_t selected = 0;
  for (const DraftCandidate& x : c) selected += x.num_selected;
  EXPECT_GT(selected, 0);
  EXPECT_EQ(gate.drafts_for_step(13), 0);  // 12..14: nothing measured
}

TEST(SpeculationGate, SelectsNothingBeforeAnyStepIsMeasured) {
  SpeculationGate gate(4, true);
  std::vector<DraftCandidate> c(2);
  c[0].num_proposed = 4;
  c[1].num_proposed = 2;
  gate.select(2, ClassRecords{}, c);
  EXPECT_EQ(c[0].num_selected, 0);
  EXPECT_EQ(c[1].num_selected, 0);
}

TEST(SpeculationGate, ARequestsOwnRecordOutweighsTheOthersOverTime) {
  const ClassRecords nobody;
  const AcceptanceRecord none;
  EXPECT_DOUBLE_EQ(SpeculationGate::acceptance_of(none, 2, nobody), 0.5);  // nothing known
  AcceptanceRecord good;
  AcceptanceRecord bad;
  for (int i = 0; i < 40; ++i) {
    good.decay();
    good.add(4, 4);
    bad.decay();
    bad.add(4, 0);
  }
  EXPECT_GT(SpeculationGate::acceptance_of(good, 2, nobody), 0.95);
  EXPECT_LT(SpeculationGate::acceptance_of(bad, 2, nobody), 0.15);
  // Steps without drafts fade a record back towards everyone's.
  for (int i = 0; i < 400; ++i) bad.decay();
  EXPECT_NEAR(SpeculationGate::acceptance_of(bad, 2, nobody), 0.5, 0.01);
}

TEST(SpeculationGate, ARequestWithoutHistoryInAClassTakesEveryRequestsRateOfIt) {
  // Every request: class 4's drafts almost all accepted, class 0's almost
  // none; class 2 never seen, so it takes the rate of all classes.
  ClassRecords every;
  every.of[4] = {200.0, 4.0};
  every.of[0] = {4.0, 100.0};
  const AcceptanceRecord none;
  EXPECT_GT(SpeculationGate::acceptance_of(none, 4, every), 0.97);
  EXPECT_LT(SpeculationGate::acceptance_of(none, 0, every), 0.06);
  const double all = (204.0 + 1.0) / (308.0 + 2.0);
  EXPECT_NEAR(SpeculationGate::acceptance_of(none, 2, every), all, 1e-12);
  // A request's own record of the class moves it from there.
  const AcceptanceRecord failing{0.0, 10.0};
  EXPECT_LT(SpeculationGate::acceptance_of(failing, 4, every), 0.2);
  // Out-of-range classes are clamped, not read past the end.
  EXPECT_DOUBLE_EQ(SpeculationGate::acceptance_of(none, 9, every),
                   SpeculationGate::acceptance_of(none, 4, every));
}

// A request's proposals differ in worth from step to step: after a long
// match (class 4) its drafts are accepted 97% of the time, after a short
// one (class 0) 35%, half of the proposals each. On a compute-bound
// machine (a draft costs 70% of a one-token step) only the former pay
// (1 + 0.97 + 0.94 + 0.91 + 0.89 tokens in 3.1 steps' time against 1, about
// 1.5x): the gate verifies those and drops the others. Told one class for
// all, it sees a request's mean rate (66%), at which no draft pays, and
// runs at about the speed of plain decoding (0.99x; 1.09-1.12x by class,
// over seeds 1-9).
TEST(SpeculationGate, VerifiesTheDraftsOfMatchClassesThatPayAndDropsTheOthers) {
  const auto cost = [](int32_t n) { return 0.3 + 0.7 * n; };
  const auto run = [&](bool by_class) {
    Sim sim(cost, {0.0}, 4);
    sim.class_alpha[0] = 0.35;
    sim.class_alpha[4] = 0.97;
    sim.class_of = [](std::mt19937& rng) {
      return std::uniform_int_distribution<int32_t>(0, 1)(rng) == 0 ? 0 : 4;
    };
    sim.report_classes = by_class;
    SpeculationGate gate(4, true);
    return sim.run(gate, 3000);
  };
  const Sim::Totals classed = run(true);
  const Sim::Totals pooled = run(false);
  EXPECT_GT(classed.speedup(1), 1.06);
  EXPECT_GT(classed.speedup(1), pooled.speedup(1) * 1.06);
  // Only class-4 proposals draft (half the steps at most; a step after one
  // that did not draft proposes nothing, the proposal back-off).
  EXPECT_GT(classed.drafting_steps, 300);
  EXPECT_LT(classed.drafting_steps, 1500);
}

TEST(SpeculationGate, OffMeansEveryProposalIsVerified) {
  Sim sim([](int32_t n) { return 1.0 * n; }, {0.0, 0.0, 0.0}, 5);
  SpeculationGate gate(5, false);
  const Sim::Totals t = sim.run(gate, 50);
  EXPECT_EQ(t.drafting_steps, 50);
  EXPECT_EQ(t.draft_tokens, 50 * 3 * 5);
}

TEST(SpeculationGate, TokensPerStepCountsAcceptedDrafts) {
  SpeculationGate gate(2, false);
  gate.observe({2, 4, 2, 1.0});  // 2 requests, 2 accepted: 4 tokens
  gate.observe({2, 0, 0, 1.0});  // 2 tokens
  EXPECT_NEAR(gate.stats().tokens_per_step, 6.0 / 4.0, 1e-12);
  EXPECT_EQ(gate.stats().num_draft_steps, 1);
  EXPECT_EQ(gate.stats().num_plain_steps, 1);
}

}  // namespace
}  // namespace strata
