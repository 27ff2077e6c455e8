#include "engine/metrics.h"

#include <gtest/gtest.h>

#include <string>

#include "engine/request_stream.h"

namespace strata {
namespace {

TEST(Metrics, HistogramBucketsAndQuantile) {
  HistogramSnapshot h;
  h.bounds = {1.0, 2.0, 4.0};
  h.counts.assign(4, 0);
  for (double v : {0.5, 1.0, 1.5, 3.0, 9.0}) observe(h, v);
  EXPECT_EQ(h.counts, (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_EQ(h.count, 5);
  EXPECT_DOUBLE_EQ(h.sum, 15.0);
  // Rank 2.5 of 5 falls in (1, 2]: 1 + (2.5 - 2) / 1.
  EXPECT_DOUBLE_EQ(histogram_quantile(h, 0.5), 1.5);
  EXPECT_DOUBLE_EQ(histogram_quantile(h, 1.0), 4.0);
}

TEST(Metrics, PrometheusTextUsesVllmNamesAndCumulativeBuckets) {
  Metrics m;
  m.observe_time_to_first_token(0.03);
  m.observe_time_to_first_token(7.0);
  m.add_prompt_tokens(17);
  m.add_generation_tokens(5);
  m.add_finished(FinishReason::kStop);
  m.add_finished(FinishReason::kStop);
  m.add_finished(FinishReason::kAbort);
  m.set_scheduler_state(3, 2, 0.25, 100, 64, 1);
  const std::string text = m.to_prometheus_text("tiny");
  for (const char* line : {
           "strata:num_requests_running{model_name=\"tiny\"} 3\n",
           "strata:num_requests_waiting{model_name=\"tiny\"} 2\n",
           "strata:kv_cache_usage_perc{model_name=\"tiny\"} 0.25\n",
           "strata:prefix_cache_queries_total{model_name=\"tiny\"} 100\n",
           "strata:prefix_cache_hits_total{model_name=\"tiny\"} 64\n",
           "strata:num_preemptions_total{model_name=\"tiny\"} 1\n",
           "strata:prompt_tokens_total{model_name=\"tiny\"} 17\n",
           "strata:generation_tokens_total{model_name=\"tiny\"} 5\n",
           "strata:request_success_total{model_name=\"tiny\",finished_reason=\"stop\"} 2\n",
           "strata:request_success_total{model_name=\"tiny\",finished_reason=\"abort\"} 1\n",
           "# TYPE strata:time_to_first_token_seconds histogram\n",
           "strata:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0.02\"} 0\n",
           "strata:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0."
           "040000000000000001\"} 1\n",
           "strata:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"10\"} 2\n",
           "strata:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"+Inf\"} 2\n",
           "strata:time_to_first_token_seconds_count{model_name=\"tiny\"} 2\n",
           "strata:inter_token_latency_seconds_count{model_name=\"tiny\"} 0\n",
           "strata:e2e_request_latency_seconds_count{model_name=\"tiny\"} 0\n",
           "strata:request_queue_time_seconds_count{model_name=\"tiny\"} 0\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
}

TEST(RequestStream, ClosesAfterEveryChoiceFinal) {
  RequestStream s(7, 2);
  EXPECT_EQ(s.id(), 7u);
  TokenEvent a;
  a.choice_index = 0;
  a.is_final = true;
  s.push(a);
  EXPECT_FALSE(s.is_closed());
  TokenEvent b;
  b.choice_index = 1;
  b.token_ids = {5};
  s.push(b);
  b.is_final = true;
  s.push(b);
  EXPECT_TRUE(s.is_closed());
  EXPECT_FALSE(s.is_done());
  EXPECT_EQ(s.drain().size(), 3u);
  EXPECT_TRUE(s.is_done());
  EXPECT_FALSE(s.pop().has_value());  // closed: does not block
}

}  // namespace
}  // namespace strata
