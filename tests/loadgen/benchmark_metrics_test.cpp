// Exact-value tests of the aggregation: percentiles (linear interpolation),
// mean/std/median, throughputs, TPOT rules, goodput under SLOs, errors.
#include "loadgen/benchmark_metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata::loadgen {
namespace {

RequestOutcome ok(double start_s, double ttft_s, double e2e_s, int64_t in, int64_t out,
                  std::vector<double> itls_s) {
  RequestOutcome o;
  o.is_success = true;
  o.start_s = start_s;
  o.ttft_s = ttft_s;
  o.e2e_s = e2e_s;
  o.num_prompt_tokens = in;
  o.num_output_tokens = out;
  o.itls_s = std::move(itls_s);
  return o;
}

TEST(Percentile, LinearInterpolationLikeNumpy) {
  const std::vector<double> v = {1.0, 2.0, 3.0, 4.0};
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 50.0), 2.5);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 90.0), 3.7);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 99.0), 3.97);
  EXPECT_DOUBLE_EQ(percentile_of_sorted(v, 100.0), 4.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted({7.0}, 99.0), 7.0);
  EXPECT_DOUBLE_EQ(percentile_of_sorted({}, 50.0), 0.0);
}

TEST(LatencyStats, MeanMedianStdPercentilesInMs) {
  const LatencyStats st = compute_latency_stats({0.004, 0.001, 0.003, 0.002}, {50, 90, 99});
  EXPECT_EQ(st.num_samples, 4);
  EXPECT_NEAR(st.mean_ms, 2.5, 1e-12);
  EXPECT_NEAR(st.median_ms, 2.5, 1e-12);
  EXPECT_NEAR(st.std_ms, std::sqrt(1.25), 1e-12);  // population std
  EXPECT_NEAR(st.min_ms, 1.0, 1e-12);
  EXPECT_NEAR(st.max_ms, 4.0, 1e-12);
  ASSERT_EQ(st.percentiles_ms.size(), 3u);
  EXPECT_NEAR(st.percentiles_ms[1].second, 3.7, 1e-12);
  EXPECT_NEAR(st.percentiles_ms[2].second, 3.97, 1e-12);
}

TEST(LatencyStats, EmptyIsZero) {
  const LatencyStats st = compute_latency_stats({}, {99});
  EXPECT_EQ(st.num_samples, 0);
  EXPECT_EQ(st.mean_ms, 0.0);
  ASSERT_EQ(st.percentiles_ms.size(), 1u);
  EXPECT_EQ(st.percentiles_ms[0].second, 0.0);
}

TEST(Aggregate, ThroughputTpotItlAndFailures) {
  std::vector<RequestOutcome> outs;
  // TPOT = (1.0 - 0.2) / 4 = 0.2 s.
  outs.push_back(ok(0.0, 0.2, 1.0, 10, 5, {0.2, 0.2, 0.2, 0.2}));
  // TPOT = (2.0 - 0.5) / 3 = 0.5 s.
  outs.push_back(ok(0.5, 0.5, 2.0, 20, 4, {0.5, 0.5, 0.5}));
  // One output token: no TPOT sample.
  outs.push_back(ok(3.0, 0.3, 0.3, 30, 1, {}));
  RequestOutcome bad;
  bad.error = "HTTP 500: boom";
  outs.push_back(bad);
  outs.push_back(bad);
  const BenchmarkMetrics m = aggregate_metrics(outs, 4.0, {}, {50, 99});
  EXPECT_EQ(m.num_completed, 3);
  EXPECT_EQ(m.num_failed, 2);
  EXPECT_EQ(m.total_input_tokens, 60);
  EXPECT_EQ(m.total_output_tokens, 10);
  EXPECT_DOUBLE_EQ(m.request_throughput, 0.75);
  EXPECT_DOUBLE_EQ(m.output_throughput, 2.5);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 17.5);
  EXPECT_FALSE(m.request_goodput.has_value());
  EXPECT_EQ(m.tpot.num_samples, 2);
  EXPECT_NEAR(m.tpot.mean_ms, 350.0, 1e-9);
  EXPECT_NEAR(m.tpot.median_ms, 350.0, 1e-9);
  EXPECT_EQ(m.itl.num_samples, 7);
  EXPECT_NEAR(m.itl.median_ms, 200.0, 1e-9);
  EXPECT_NEAR(m.ttft.mean_ms, 1000.0 / 3.0, 1e-9);
  EXPECT_NEAR(m.e2el.percentiles_ms[1].second, (1.0 + 0.98 * 1.0) * 1e3, 1e-9);
  // Requests 0 and 1 overlap during [0.5, 1.0].
  EXPECT_EQ(m.max_concurrent_requests, 2);
  ASSERT_EQ(m.first_errors.size(), 1u);  // distinct messages only
  EXPECT_EQ(m.first_errors[0], "HTTP 500: boom");
}

TEST(Aggregate, GoodputCountsRequestsMeetingEverySlo) {
  std::vector<RequestOutcome> outs;
  outs.push_back(ok(0.0, 0.1, 1.0, 1, 10, {}));  // ttft 100 ms, tpot 100 ms
  outs.push_back(ok(0.0, 0.3, 1.2, 1, 10, {}));  // ttft 300 ms, tpot 100 ms
  outs.push_back(ok(0.0, 0.1, 2.8, 1, 10, {}));  // ttft 100 ms, tpot 300 ms
  outs.push_back(ok(0.0, 0.2, 0.2, 1, 1, {}));   // one token: tpot 0
  SloOptions slo;
  slo.ttft_ms = 200.0;
  BenchmarkMetrics m = aggregate_metrics(outs, 2.0, slo, {99});
  ASSERT_TRUE(m.request_goodput.has_value());
  EXPECT_EQ(m.num_good, 3);
  EXPECT_DOUBLE_EQ(*m.request_goodput, 1.5);
  slo.tpot_ms = 150.0;
  m = aggregate_metrics(outs, 2.0, slo, {99});
  EXPECT_EQ(m.num_good, 2);
  EXPECT_DOUBLE_EQ(*m.request_goodput, 1.0);
  slo.e2el_ms = 500.0;
  m = aggregate_metrics(outs, 2.0, slo, {99});
  EXPECT_EQ(m.num_good, 1);
}

}  // namespace
}  // namespace strata::loadgen
