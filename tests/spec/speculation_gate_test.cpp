#include "spec/speculation_gate.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

// Runs `steps` decode steps of `batch` requests against a made-up machine:
// a plain step takes 1 s, a drafting step `draft_cost` s and yields
// `accepted` accepted drafts per request. Returns how many steps drafted.
int run(SpeculationGate& gate, int steps, int32_t batch, double draft_cost, int32_t accepted) {
  int drafted = 0;
  for (int i = 0; i < steps; ++i) {
    const int32_t k = gate.drafts_for_step(batch);
    if (k > 0) {
      ++drafted;
      gate.observe({batch, int64_t{batch} * k, int64_t{batch} * accepted, draft_cost});
    } else {
      gate.observe({batch, 0, 0, 1.0});
    }
  }
  return drafted;
}

TEST(SpeculationGate, DraftsWhenTheYieldPaysForTheCost) {
  SpeculationGate gate(4, true);
  // 2 accepted per request: 3 tokens per step for 1.5x the time.
  const int drafted = run(gate, 200, 1, 1.5, 2);
  EXPECT_GT(drafted, 180);
  EXPECT_TRUE(gate.stats().is_drafting);
  EXPECT_NEAR(gate.stats().cost_ratio, 1.5, 1e-9);
  EXPECT_NEAR(gate.stats().draft_yield, 3.0, 1e-9);
  EXPECT_NEAR(gate.stats().acceptance_rate(), 0.5, 1e-9);
}

TEST(SpeculationGate, StopsWhenItDoesNotPayAndProbesRarely) {
  SpeculationGate gate(4, true);
  // 0.3 accepted per request on average would be 1.3 tokens for 1.5x the
  // time; here nothing is accepted at all.
  const int drafted = run(gate, 400, 8, 1.5, 0);
  EXPECT_FALSE(gate.stats().is_drafting);
  // Warm-up (2) plus probes backing off from every 16 steps.
  EXPECT_LE(drafted, 12);
  EXPECT_GE(drafted, 2);
}

TEST(SpeculationGate, AClearLossEndsTheWarmUpAtOnce) {
  SpeculationGate gate(4, true);
  // A compute-bound batch: drafting costs 5x and yields nothing.
  const int drafted = run(gate, 100, 16, 5.0, 0);
  // One warm-up step, then single-step probes (every 32, then 64 steps).
  EXPECT_LE(drafted, 3);
  EXPECT_GE(drafted, 1);
  EXPECT_FALSE(gate.stats().is_drafting);
}

TEST(SpeculationGate, BatchSizesAreMeasuredApart) {
  SpeculationGate gate(3, true);
  run(gate, 100, 1, 1.2, 2);   // pays at batch 1
  run(gate, 100, 16, 3.5, 2);  // a compute-bound batch: it does not
  EXPECT_EQ(gate.drafts_for_step(16), 0);
  EXPECT_EQ(gate.drafts_for_step(1), 3);
}

TEST(SpeculationGate, NotesAChangeOfWorkload) {
  SpeculationGate gate(4, true);
  run(gate, 100, 1, 1.5, 0);
  EXPECT_EQ(gate.drafts_for_step(1), 0);
  // Drafts start being accepted: a probe sees it and the gate turns on.
  run(gate, 200, 1, 1.5, 3);
  EXPECT_TRUE(gate.stats().is_drafting);
}

TEST(SpeculationGate, OffMeansAlwaysDraft) {
  SpeculationGate gate(5, false);
  EXPECT_EQ(run(gate, 50, 4, 10.0, 0), 50);
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
