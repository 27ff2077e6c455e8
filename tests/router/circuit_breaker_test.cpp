#include "router/circuit_breaker.h"

#include <gtest/gtest.h>

namespace strata::router {
namespace {

TEST(CircuitBreaker, OpensAfterTheThresholdAndBacksOffDoubling) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.failure_threshold = 3;
  o.initial_backoff_ms = 1000;
  o.max_backoff_ms = 3000;
  CircuitBreaker b(o, &clock);
  EXPECT_FALSE(b.record_failure());
  EXPECT_FALSE(b.record_failure());
  EXPECT_TRUE(b.allows_request());
  EXPECT_TRUE(b.record_failure());  // ejected
  EXPECT_EQ(b.state(), CircuitBreaker::State::kOpen);
  EXPECT_FALSE(b.allows_request());
  clock.advance_ns(999'000'000);
  EXPECT_FALSE(b.allows_request());
  clock.advance_ns(1'000'000);
  EXPECT_TRUE(b.allows_request());  // half-open: one trial
  EXPECT_EQ(b.state(), CircuitBreaker::State::kHalfOpen);
  EXPECT_TRUE(b.record_failure());  // the trial failed: open for 2 s
  clock.advance_ns(1'999'000'000);
  EXPECT_FALSE(b.allows_request());
  clock.advance_ns(1'000'000);
  EXPECT_TRUE(b.allows_request());
  EXPECT_TRUE(b.record_failure());  // 4 s, capped at 3 s
  clock.advance_ns(3'000'000'000);
  EXPECT_TRUE(b.allows_request());
  EXPECT_TRUE(b.record_success());  // re-admitted
  EXPECT_EQ(b.state(), CircuitBreaker::State::kClosed);
  EXPECT_EQ(b.num_ejections(), 3);
  // The backoff starts over.
  for (int i = 0; i < 3; ++i) b.record_failure();
  clock.advance_ns(1'000'000'000);
  EXPECT_TRUE(b.allows_request());
}

TEST(CircuitBreaker, ASuccessResetsTheCount) {
  FakeClock clock;
  CircuitBreaker b(CircuitBreakerOptions{}, &clock);
  b.record_failure();
  b.record_failure();
  EXPECT_FALSE(b.record_success());
  b.record_failure();
  b.record_failure();
  EXPECT_EQ(b.state(), CircuitBreaker::State::kClosed);
}

}  // namespace
}  // namespace strata::router
