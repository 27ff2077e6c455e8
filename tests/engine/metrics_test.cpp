#include "engine/metrics.h"

#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "engine/engine.h"
#include "engine/request_stream.h"
#include "kv_tier_test_util.h"

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
           "# HELP strata:prompt_tokens_total Number of prefill tokens processed.\n",
           "# TYPE strata:prompt_tokens_total counter\n",
           "# TYPE strata:request_success_total counter\n",
           "# TYPE strata:time_to_first_token_seconds histogram\n",
           "strata:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0.02\"} 0\n",
           "strata:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0.04\"} 1\n",
           "strata:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"10\"} 2\n",
           "strata:time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"+Inf\"} 2\n",
           "strata:time_to_first_token_seconds_count{model_name=\"tiny\"} 2\n",
           "strata:inter_token_latency_seconds_count{model_name=\"tiny\"} 0\n",
           "strata:e2e_request_latency_seconds_count{model_name=\"tiny\"} 0\n",
           "strata:request_queue_time_seconds_count{model_name=\"tiny\"} 0\n",
       }) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
  // Bucket bounds print as the short decimals they were written as.
  EXPECT_EQ(text.find("0000000"), std::string::npos) << text;
}

TEST(Metrics, ForwardPhasesExportTimeWorkAndFloorsOnlyWithCeilings) {
  Metrics m;
  ForwardProfileTotals t;
  PhaseTotals& c = t.at(ForwardPhase::kGateUpProj, RooflineBound::kCompute);
  c = PhaseTotals{0.5, 0.25, 2e9, 1e8, 3};
  t.at(ForwardPhase::kExchange, RooflineBound::kNone) = PhaseTotals{0.125, 0, 0, 4096, 1};
  m.add_forward_profile(t);
  m.add_forward_profile(t);
  std::string text = m.to_prometheus_text("tiny");
  EXPECT_NE(text.find("# TYPE strata:forward_phase_seconds_total counter\n"), std::string::npos);
  EXPECT_NE(
      text.find("strata:forward_phase_seconds_total{model_name=\"tiny\",phase=\"gate_up_proj\","
                "bound=\"compute\"} 1\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("strata:forward_phase_operations_total{model_name=\"tiny\",phase=\"gate_up_"
                      "proj\",bound=\"compute\"} 4e+09\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("strata:forward_phase_seconds_total{model_name=\"tiny\",phase=\"exchange\","
                      "bound=\"none\"} 0.25\n"),
            std::string::npos)
      << text;
  // No ceilings measured: no floors, no machine gauges.
  EXPECT_EQ(text.find("forward_phase_floor_seconds"), std::string::npos) << text;
  EXPECT_EQ(text.find("machine_read_bandwidth"), std::string::npos) << text;

  MachineCeilings ceilings;
  ceilings.read_bw_gbs = 20;
  ceilings.fp32_gflops = 100;
  ceilings.int8_gops = 400;
  m.set_machine_ceilings(ceilings);
  text = m.to_prometheus_text("tiny");
  EXPECT_NE(text.find("strata:forward_phase_floor_seconds_total{model_name=\"tiny\",phase=\"gate_"
                      "up_proj\",bound=\"compute\"} 0.5\n"),
            std::string::npos)
      << text;
  // The exchange has no floor.
  EXPECT_EQ(text.find("forward_phase_floor_seconds_total{model_name=\"tiny\",phase=\"exchange\""),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("strata:machine_read_bandwidth_bytes_per_second{model_name=\"tiny\"} 2e+10\n"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("machine_peak_amx"), std::string::npos) << text;  // no AMX figure given
}

// Runs `command`, returning its stdout and stderr; nullopt if it could not run.
std::optional<std::string> run_command(const std::string& command, int* exit_code) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return std::nullopt;
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// The text a real engine exports after a few requests (every family,
// the tier ones included: a RAM and a disk tier) passes Prometheus' own
// linter, but for its warning about the colon in "strata:" (the
// recording-rule character, which vLLM's "vllm:" names use too).
TEST(Metrics, PromtoolFindsNothingButColonsInARealEnginesText) {
  STRATA_REQUIRE_MODEL();
  int exit_code = 0;
  const std::optional<std::string> version = run_command("promtool --version", &exit_code);
  if (!version || exit_code != 0) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus; scripts/install-deps.sh)";
  }
  testing::TempDir dir;
  EngineOptions o = testing::tier_options();
  o.kv_tiers.cpu_bytes = size_t{16} << 20;
  o.kv_tiers.disk_dir = dir.str() + "/kv";
  // Ceilings as a server measures them: the forward-phase floors and the
  // machine gauges are in the text too.
  o.ceilings.read_bw_gbs = 20;
  o.ceilings.fp32_gflops = 100;
  o.ceilings.int8_gops = 400;
  Result<std::unique_ptr<Engine>> engine =
      Engine::create(*testing::peaky_model().weights, *testing::peaky_model().tokenizer, o);
  ASSERT_TRUE(engine.is_ok()) << engine.status().message();
  // The same document twice (the second hits the pool), one short request.
  for (const GenerationRequest& r :
       {testing::document_request(3), testing::document_request(3), testing::canary_request()}) {
    Result<std::shared_ptr<RequestStream>> stream = (*engine)->add_request(r);
    ASSERT_TRUE(stream.is_ok()) << stream.status().message();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!(*stream)->is_done() && std::chrono::steady_clock::now() < deadline) {
      (*stream)->pop_for(std::chrono::milliseconds(100));
    }
    ASSERT_TRUE((*stream)->is_done());
  }
  const std::string text = (*engine)->metrics().to_prometheus_text("tiny");
  ASSERT_NE(text.find("strata:kv_tier_hits_total{model_name=\"tiny\",tier=\"disk\"}"),
            std::string::npos)
      << text;
  ASSERT_NE(text.find("strata:forward_phase_floor_seconds_total{model_name=\"tiny\",phase=\"qkv_"
                      "proj\""),
            std::string::npos)
      << text;
  const std::string path = dir.str() + "/metrics.txt";
  std::ofstream(path) << text;
  const std::optional<std::string> out =
      run_command("promtool check metrics < '" + path + "'", &exit_code);
  ASSERT_TRUE(out.has_value());
  std::istringstream lines(*out);
  int num_colon_warnings = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("metric names should not contain ':'") != std::string::npos) {
      ++num_colon_warnings;
      continue;
    }
    ADD_FAILURE() << "promtool: " << line;
  }
  EXPECT_GT(num_colon_warnings, 0) << *out;  // promtool did read the families
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
