#include "router/ttft_estimate.h"

#include <gtest/gtest.h>

namespace strata::router {
namespace {

PrefixProbe idle(double prefill_rate = 1000.0) {
  PrefixProbe p;
  p.block_size = 16;
  p.prefill_tokens_per_s = prefill_rate;
  return p;
}

TEST(TtftEstimate, ComputesWhatNobodyHolds) {
  PrefixProbe p = idle();
  const TtftEstimate e = estimate_ttft(1000, p, 0, CostModel{});
  EXPECT_EQ(e.num_cached_tokens, 0);
  EXPECT_EQ(e.num_computed_tokens, 1000);
  EXPECT_DOUBLE_EQ(e.seconds, 1.0);
}

TEST(TtftEstimate, PoolThenTiersInOrderAndTheLastTokenIsAlwaysComputed) {
  PrefixProbe p = idle();
  p.num_pool_tokens = 256;
  p.tiers = {{"ram", 256, true, 0.0}, {"disk", 768, true, 1000.0}, {"redis", 1024, true, 500.0}};
  // A 1024-token prompt: at most the 63 blocks before the last token
  // (1008) cached; the pool 256, RAM adds none (not beyond the pool), disk
  // 512, Redis 240.
  const TtftEstimate e = estimate_ttft(1024, p, 0, CostModel{});
  EXPECT_EQ(e.num_pool_tokens, 256);
  EXPECT_EQ(e.num_cached_tokens, 1008);
  EXPECT_EQ(e.num_computed_tokens, 16);
  EXPECT_NEAR(e.seconds, 512.0 / 1000 + 240.0 / 500 + 16.0 / 1000, 1e-12);
  // One more token: all 64 blocks may be hits.
  EXPECT_EQ(estimate_ttft(1025, p, 0, CostModel{}).num_cached_tokens, 1024);
}

TEST(TtftEstimate, UnavailableTiersAndUnmeasuredRates) {
  PrefixProbe p = idle(0.0);  // no prefill rate measured yet
  p.tiers = {{"redis", 512, false, 0.0}, {"disk", 256, true, 0.0}};
  CostModel m;
  m.default_prefill_tokens_per_s = 100.0;
  m.default_tier_tokens_per_s = {{"disk", 256.0}};
  const TtftEstimate e = estimate_ttft(1000, p, 0, m);
  EXPECT_EQ(e.num_cached_tokens, 256);
  EXPECT_NEAR(e.seconds, 1.0 + 744.0 / 100.0, 1e-12);
}

TEST(TtftEstimate, QueueIsTheLargerOfProbeAndRoutedNotTheSum) {
  PrefixProbe p = idle();
  p.num_pending_prefill_tokens = 3000;
  EXPECT_DOUBLE_EQ(estimate_ttft(100, p, 1000, CostModel{}).queue_seconds, 3.0);
  EXPECT_DOUBLE_EQ(estimate_ttft(100, p, 5000, CostModel{}).queue_seconds, 5.0);
}

}  // namespace
}  // namespace strata::router
