#include "spec/step_cost_model.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

// A size measured: the samples a bucket needs before it counts.
void measure(StepCostModel& m, int32_t n, double seconds) {
  for (int32_t i = 0; i < StepCostModel::kMinSamples; ++i) m.record(n, seconds);
}

TEST(StepCostModel, BucketsAreExactUpTo32ThenEightPerOctave) {
  for (int32_t n = 1; n <= 32; ++n) {
    EXPECT_EQ(StepCostModel::bucket_of(n), n - 1);
    EXPECT_EQ(StepCostModel::bucket_start(n - 1), n);
  }
  // Every count falls in the bucket that starts at or below it, and the
  // next bucket starts above it.
  int32_t previous = StepCostModel::bucket_of(32);
  for (int32_t n = 33; n <= 70000; ++n) {
    const int32_t b = StepCostModel::bucket_of(n);
    ASSERT_GE(b, previous) << n;
    ASSERT_LE(b, previous + 1) << n;
    ASSERT_LE(StepCostModel::bucket_start(b), n) << n;
    ASSERT_GT(StepCostModel::bucket_start(b + 1), n) << n;
    previous = b;
  }
  EXPECT_EQ(StepCostModel::bucket_of(33), StepCostModel::bucket_of(35));
  EXPECT_NE(StepCostModel::bucket_of(35), StepCostModel::bucket_of(36));
  EXPECT_EQ(StepCostModel::bucket_of(64), StepCostModel::bucket_of(71));
  EXPECT_NE(StepCostModel::bucket_of(71), StepCostModel::bucket_of(72));
}

TEST(StepCostModel, AMeasuredSizeIsItsFastestRecentSample) {
  StepCostModel m;
  EXPECT_EQ(m.estimate(4), 0.0);
  EXPECT_FALSE(m.is_measured(4));
  m.record(4, 3.0);
  m.record(4, 1.0);
  // Too few samples to judge the size by.
  EXPECT_FALSE(m.is_measured(4));
  EXPECT_EQ(m.estimate(4), 0.0);
  m.record(4, 9.0);  // the machine was busy
  EXPECT_TRUE(m.is_measured(4));
  EXPECT_DOUBLE_EQ(m.estimate(4), 1.0);
  // The window holds the latest kWindow samples only.
  // Once the window has turned over, the early fast sample no longer
  // counts (the estimate follows the new samples, through the speed).
  for (int i = 0; i < StepCostModel::kWindow; ++i) m.record(4, 2.0);
  EXPECT_GT(m.estimate(4), 1.5);
  EXPECT_LT(m.estimate(4), 2.1);
  EXPECT_EQ(m.newest_sample(4), m.num_recorded() - 1);
}

TEST(StepCostModel, InterpolatesBetweenAndExtendsBeyondMeasuredSizes) {
  StepCostModel m;
  measure(m, 10, 1.0);
  // One size: flat both ways (a larger size is assumed no dearer, so a
  // policy that wants it tries it).
  m.record(40, 9.0);  // one sample of a size is not a measurement
  EXPECT_DOUBLE_EQ(m.estimate(1), 1.0);
  EXPECT_DOUBLE_EQ(m.estimate(40), 1.0);
  measure(m, 20, 2.0);
  EXPECT_DOUBLE_EQ(m.estimate(15), 1.5);
  EXPECT_DOUBLE_EQ(m.estimate(12), 1.2);
  // Above: the least-squares slope of the measured points (0.1 s a token).
  EXPECT_NEAR(m.estimate(30), 3.0, 1e-12);
  measure(m, 30, 2.5);
  // Points (10, 1), (20, 2), (30, 2.5): slope 0.075.
  EXPECT_NEAR(m.estimate(32), 2.5 + 2 * 0.075, 1e-12);
  // Below the smallest: the first segment's slope (0.1 s a token) carried
  // down, never below the smallest's cost per token (0.1 s) times n.
  EXPECT_NEAR(m.estimate(8), 0.8, 1e-12);
  StepCostModel fixed_cost;
  measure(fixed_cost, 10, 2.0);
  measure(fixed_cost, 20, 3.0);
  EXPECT_NEAR(fixed_cost.estimate(8), 1.8, 1e-12);
  EXPECT_NEAR(fixed_cost.estimate(1), 1.1, 1e-12);
  EXPECT_NEAR(m.estimate(3), 0.3, 1e-12);  // the floor: 3 tokens at 0.1 s
  // A slope that comes out negative is taken as flat.
  StepCostModel noisy;
  measure(noisy, 8, 2.0);
  measure(noisy, 16, 1.0);
  EXPECT_DOUBLE_EQ(noisy.estimate(64), 1.0);
}

TEST(StepCostModel, ADriftInTheMachinesSpeedKeepsSizesComparable) {
  StepCostModel m;
  measure(m, 1, 1.0);
  measure(m, 8, 2.0);
  EXPECT_DOUBLE_EQ(m.estimate(8) / m.estimate(1), 2.0);
  // Everything takes twice as long for a while: only size 1 is seen.
  for (int i = 0; i < 60; ++i) m.record(1, 2.0);
  EXPECT_NEAR(m.speed(), 2.0, 0.2);
  EXPECT_NEAR(m.estimate(8), 4.0, 0.4);
  // Size 8 is then sampled slow too: normalised, those samples agree with
  // the old ones, so the ratio holds.
  measure(m, 8, 4.0);
  EXPECT_NEAR(m.estimate(8) / m.estimate(1), 2.0, 0.1);
  // And back to full speed.
  for (int i = 0; i < 60; ++i) m.record(1, 1.0);
  EXPECT_NEAR(m.speed(), 1.0, 0.1);
  EXPECT_NEAR(m.estimate(8) / m.estimate(1), 2.0, 0.1);
}

TEST(StepCostModel, SizesWithinAWideBucketDoNotMoveTheSpeed) {
  // Steps of 40..47 tokens (one bucket) on a machine whose speed never
  // changes, each costing 1 ms a token: a step of 47 is not a slow step of
  // 40. Reading it as one drifted the speed by 1.7% here (8.5% in a
  // simulated batch of 16 drafting into steps of 33-80 tokens), and every
  // estimate with it.
  StepCostModel m;
  for (int i = 0; i < 400; ++i) {
    const int32_t n = 40 + (i * 5) % 8;
    m.record(n, 0.001 * n);
    m.record(16, 0.016);
  }
  EXPECT_NEAR(m.speed(), 1.0, 1e-9);
  EXPECT_NEAR(m.estimate(16), 0.016, 1e-12);
  EXPECT_NEAR(m.estimate(40), 0.040, 1e-12);
}

TEST(StepCostModel, OldSamplesExpire) {
  StepCostModel m;
  measure(m, 64, 5.0);
  for (int64_t i = 3; i < StepCostModel::kMaxAge; ++i) m.record(1, 1.0);
  EXPECT_TRUE(m.is_measured(64));
  m.record(1, 1.0);  // the first of the three expires: two left
  EXPECT_FALSE(m.is_measured(64));
  EXPECT_EQ(m.newest_sample(64), -1);
  // Only size 1 is left: flat above it.
  EXPECT_DOUBLE_EQ(m.estimate(64), 1.0);
}

}  // namespace
}  // namespace strata
