// Batch invariance: a request's output must not depend on what it is served
// with. Each request is first run alone on a fresh engine; then the same
// requests run together in ways that change batch shape, chunking, KV
// placement and prefix hits, and every output must match exactly.
#include <gtest/gtest.h>

#include "engine/engine_core.h"
#include "engine_test_util.h"

namespace strata::testing {
namespace {

// 32 mixed requests: odd prompt lengths 1..150, outputs 5..40 tokens, a
// group sharing a 50-token prefix, and seeded sampling beside greedy ones.
std::vector<GenerationRequest> mixed_workload() {
  std::vector<GenerationRequest> requests;
  const std::vector<int32_t> shared = random_prompt(999, 50);
  for (int i = 0; i < 32; ++i) {
    const int32_t length = 1 + (i * 37 + 11) % 150;
    std::vector<int32_t> prompt = random_prompt(100 + i, length);
    if (i % 4 == 1) {
      prompt.insert(prompt.begin(), shared.begin(), shared.end());
    }
    GenerationRequest r = greedy_request(std::move(prompt), 5 + (i * 7) % 36);
    if (i % 3 == 2) {
      r.sampling.temperature = 0.9f;
      r.sampling.top_k = 40;
      r.sampling.seed = 1000 + i;
    }
    requests.push_back(std::move(r));
  }
  return requests;
}

class BatchInvarianceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!peaky_model().tokenizer) return;
    workload_ = new std::vector<GenerationRequest>(mixed_workload());
    solo_ = new std::vector<std::vector<int32_t>>();
    for (const GenerationRequest& r : *workload_) solo_->push_back(solo_output(r));
  }
  static void TearDownTestSuite() {
    delete workload_;
    delete solo_;
    workload_ = nullptr;
    solo_ = nullptr;
  }

  void expect_matches_solo(const std::vector<std::map<int32_t, ChoiceOutput>>& outputs) {
    ASSERT_EQ(outputs.size(), solo_->size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      ASSERT_EQ(outputs[i].size(), 1u) << "request " << i;
      const ChoiceOutput& c = outputs[i].at(0);
      EXPECT_EQ(c.finish_reason, FinishReason::kLength)
          << "request " << i << " " << c.error_message;
      EXPECT_EQ(c.tokens, (*solo_)[i]) << "request " << i;
    }
  }

  static std::vector<GenerationRequest>* workload_;
  static std::vector<std::vector<int32_t>>* solo_;
};

std::vector<GenerationRequest>* BatchInvarianceTest::workload_ = nullptr;
std::vector<std::vector<int32_t>>* BatchInvarianceTest::solo_ = nullptr;

TEST_F(BatchInvarianceTest, SoloOutputsAreDecisive) {
  STRATA_REQUIRE_MODEL();
  // The solo runs produced full-length outputs (the comparison below is not
  // vacuous) and are reproducible.
  for (size_t i = 0; i < solo_->size(); ++i) {
    EXPECT_EQ(static_cast<int32_t>((*solo_)[i].size()), (*workload_)[i].max_tokens);
  }
  EXPECT_EQ(solo_output((*workload_)[5]), (*solo_)[5]);
}

TEST_F(BatchInvarianceTest, BatchOf32MixedRequests) {
  STRATA_REQUIRE_MODEL();
  auto core = make_core(small_options(512, 2048));
  expect_matches_solo(run_to_completion(*core, *workload_));
}

TEST_F(BatchInvarianceTest, ChunkedPrefillBudget64) {
  STRATA_REQUIRE_MODEL();
  auto core = make_core(small_options(512, 64));
  expect_matches_solo(run_to_completion(*core, *workload_));
}

TEST_F(BatchInvarianceTest, ServedFromThePrefixCache) {
  STRATA_REQUIRE_MODEL();
  auto core = make_core(small_options(512, 256));
  run_to_completion(*core, *workload_);  // warms the cache
  const auto outputs = run_to_completion(*core, *workload_);
  expect_matches_solo(outputs);
  int64_t num_cached = 0;
  for (const auto& o : outputs) num_cached += o.at(0).usage.num_cached_prompt_tokens;
  EXPECT_GT(num_cached, 1000);
}

TEST_F(BatchInvarianceTest, AfterForcedPreemption) {
  STRATA_REQUIRE_MODEL();
  // 40 blocks (640 tokens) for ~4000 tokens of demand.
  auto core = make_core(small_options(40, 256));
  const auto outputs = run_to_completion(*core, *workload_);
  EXPECT_GT(core->scheduler().stats().num_preemptions, 0);
  expect_matches_solo(outputs);
}

TEST_F(BatchInvarianceTest, ParallelSamplingBesideOtherRequests) {
  STRATA_REQUIRE_MODEL();
  // n = 3 sampled: choice i must equal the request alone with seed + i; n = 3
  // greedy: all choices equal the greedy solo output.
  GenerationRequest sampled = greedy_request(random_prompt(7, 70), 24);
  sampled.sampling.temperature = 1.0f;
  sampled.sampling.seed = 42;
  GenerationRequest greedy = greedy_request(random_prompt(8, 45), 20);

  std::vector<std::vector<int32_t>> expected_sampled;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest one = sampled;
    one.sampling.seed = 42 + i;
    expected_sampled.push_back(solo_output(one));
  }
  const std::vector<int32_t> expected_greedy = solo_output(greedy);

  std::vector<GenerationRequest> requests(workload_->begin(), workload_->begin() + 10);
  sampled.n = 3;
  greedy.n = 3;
  requests.push_back(sampled);
  requests.push_back(greedy);
  auto core = make_core(small_options(512, 128));
  const auto outputs = run_to_completion(*core, requests);
  for (size_t i = 0; i < 10; ++i) EXPECT_EQ(outputs[i].at(0).tokens, (*solo_)[i]) << i;
  ASSERT_EQ(outputs[10].size(), 3u);
  ASSERT_EQ(outputs[11].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(outputs[10].at(i).tokens, expected_sampled[i]) << "sampled choice " << i;
    EXPECT_EQ(outputs[11].at(i).tokens, expected_greedy) << "greedy choice " << i;
  }
  // The choices differ (different seeds), and choices 1, 2 reused the prompt's
  // full blocks: 70 tokens -> 4 full blocks of 16.
  EXPECT_NE(expected_sampled[0], expected_sampled[1]);
  EXPECT_EQ(outputs[10].at(0).usage.num_cached_prompt_tokens, 0);
  EXPECT_EQ(outputs[10].at(1).usage.num_cached_prompt_tokens, 64);
  EXPECT_EQ(outputs[10].at(2).usage.num_cached_prompt_tokens, 64);
}

}  // namespace
}  // namespace strata::testing
