#include "router/route_policy.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::router {
namespace {

Candidate replica(size_t i, int64_t pool_tokens, int64_t pending_tokens, double rate = 1000.0) {
  Candidate c;
  c.replica = i;
  c.url = "http://10.0.0." + std::to_string(i) + ":8000";
  PrefixProbe p;
  p.block_size = 16;
  p.num_pool_tokens = pool_tokens;
  p.num_pending_prefill_tokens = pending_tokens;
  p.prefill_tokens_per_s = rate;
  c.probe = p;
  return c;
}

TEST(RoutePolicy, ParsesItsNames) {
  for (const char* n : {"cache-aware", "least-load", "round-robin", "session"}) {
    ASSERT_TRUE(parse_policy(n).is_ok()) << n;
    EXPECT_STREQ(policy_name(*parse_policy(n)), n);
  }
  EXPECT_FALSE(parse_policy("random").is_ok());
}

TEST(RoutePolicy, CacheAwareSendsToTheReplicaHoldingThePrefix) {
  RoutePolicy policy(Policy::kCacheAware, CostModel{});
  const std::vector<Candidate> c = {replica(0, 0, 0), replica(1, 960, 0), replica(2, 320, 0)};
  const RouteChoice r = policy.choose({1000, ""}, c);
  EXPECT_EQ(r.order, (std::vector<size_t>{1, 2, 0}));
  ASSERT_TRUE(r.estimate);
  EXPECT_EQ(r.estimate->num_cached_tokens, 960);
}

TEST(RoutePolicy, ANoisyRateMeasurementDoesNotThrowAPrefixAway) {
  RoutePolicy policy(Policy::kCacheAware, CostModel{});
  // r1 holds 704 of 1000 tokens but last measured a tenth of the others'
  // rate: taken at face value it would lose (296 / 100 > 1000 / 1000);
  // clamped to half the median it wins (296 / 500).
  std::vector<Candidate> c = {replica(0, 0, 0, 1000.0), replica(1, 704, 0, 100.0),
                              replica(2, 0, 0, 1000.0)};
  EXPECT_EQ(policy.choose({1000, ""}, c).order.front(), 1u);
  // A replica really twice as slow still scores slower on equal holdings.
  c[1].probe->num_pool_tokens = 0;
  c[1].probe->prefill_tokens_per_s = 500.0;
  EXPECT_EQ(policy.choose({1000, ""}, c).order.back(), 1u);
}

TEST(RoutePolicy, AReplicaThatHasNotMeasuredIsTakenAtTheMedianRate) {
  RoutePolicy policy(Policy::kCacheAware, CostModel{});  // default 500 tok/s
  // r0 measured 200 tok/s and holds 480 of 640 tokens: 160 / 200 = 0.8 s.
  // Fresh r1 at the default would take 640 / 500 = 1.28 s; at the median
  // (200) 3.2 s. Either way r0; and r1 is not preferred for being unmeasured.
  std::vector<Candidate> c = {replica(0, 480, 0, 200.0), replica(1, 0, 0, 0.0)};
  EXPECT_EQ(policy.choose({640, ""}, c).order.front(), 0u);
  // Holding less (160 of 640): at the default r1 would win (1.28 s < 2.4 s);
  // like the others, it does not (3.2 s).
  c[0].probe->num_pool_tokens = 160;
  EXPECT_EQ(policy.choose({640, ""}, c).order.front(), 0u);
}

TEST(RoutePolicy, ABusyHolderLosesToAnIdleReplicaThatCanPullFromRedis) {
  RoutePolicy policy(Policy::kCacheAware, CostModel{});
  std::vector<Candidate> c = {replica(0, 1984, 20000), replica(1, 0, 0)};
  c[1].probe->tiers = {{"redis", 1984, true, 50000.0}};
  const RouteChoice r = policy.choose({2000, ""}, c);
  EXPECT_EQ(r.order.front(), 1u);  // 20 s of queue vs 40 ms of load
  EXPECT_EQ(r.estimate->num_cached_tokens, 1984);
  // Idle, the holder wins again.
  c[0].probe->num_pending_prefill_tokens = 0;
  EXPECT_EQ(policy.choose({2000, ""}, c).order.front(), 0u);
}

TEST(RoutePolicy, WithoutAProbeAReplicaIsScoredByTheLoadTheRouterKnows) {
  RoutePolicy policy(Policy::kCacheAware, CostModel{});
  std::vector<Candidate> c = {replica(0, 0, 0), replica(1, 0, 0)};
  c[0].probe.reset();
  c[0].routed_pending_tokens = 4000;
  EXPECT_EQ(policy.choose({500, ""}, c).order, (std::vector<size_t>{1, 0}));
  c[0].routed_pending_tokens = 0;
  c[1].probe->num_pending_prefill_tokens = 4000;
  EXPECT_EQ(policy.choose({500, ""}, c).order, (std::vector<size_t>{0, 1}));
}

TEST(RoutePolicy, EqualScoresGoToFewerRequestsInFlight) {
  RoutePolicy policy(Policy::kCacheAware, CostModel{});
  std::vector<Candidate> c = {replica(0, 0, 0), replica(1, 0, 0), replica(2, 0, 0)};
  c[0].num_in_flight = 3;
  c[1].num_in_flight = 1;
  c[2].num_in_flight = 2;
  EXPECT_EQ(policy.choose({100, ""}, c).order, (std::vector<size_t>{1, 2, 0}));
}

TEST(RoutePolicy, LeastLoadAndRoundRobin) {
  std::vector<Candidate> c = {replica(0, 0, 0), replica(1, 0, 0), replica(2, 0, 0)};
  c[0].probe->num_running = 4;
  c[1].probe->num_waiting = 1;
  c[2].probe->num_running = 2;
  RoutePolicy least(Policy::kLeastLoad, CostModel{});
  EXPECT_EQ(least.choose({10, ""}, c).order, (std::vector<size_t>{1, 2, 0}));
  RoutePolicy rr(Policy::kRoundRobin, CostModel{});
  EXPECT_EQ(rr.choose({10, ""}, c).order, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(rr.choose({10, ""}, c).order, (std::vector<size_t>{1, 2, 0}));
  EXPECT_EQ(rr.choose({10, ""}, c).order, (std::vector<size_t>{2, 0, 1}));
  EXPECT_EQ(rr.choose({10, ""}, c).order.front(), 0u);
}

TEST(RoutePolicy, SessionsStayHomeAndMoveOnlyWhenHomeIsGone) {
  std::vector<Candidate> all = {replica(0, 0, 0), replica(1, 0, 0), replica(2, 0, 0)};
  RoutePolicy policy(Policy::kSession, CostModel{});
  policy.set_members({all[0].url, all[1].url, all[2].url});
  const size_t home = policy.choose({10, "alice"}, all).order.front();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(policy.choose({10, "alice"}, all).order.front(), home);
  // Home ejected: the next on the ring, the same every time.
  std::vector<Candidate> rest;
  for (const Candidate& c : all) {
    if (c.replica != home) rest.push_back(c);
  }
  const size_t second = rest[policy.choose({10, "alice"}, rest).order.front()].replica;
  EXPECT_NE(second, home);
  EXPECT_EQ(all[policy.choose({10, "alice"}, all).order[1]].replica, second);
  // No key: cache-aware.
  all[2].probe->num_pool_tokens = 96;
  EXPECT_EQ(policy.choose({100, ""}, all).order.front(), 2u);
}

}  // namespace
}  // namespace strata::router
