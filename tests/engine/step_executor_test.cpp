// StepExecutor runs plans built by hand: it needs nothing but the plan (no
// scheduler), introduces a request from its first plan's NewRequestData,
// masks stop tokens when the plan says so, drops state for finished_ids, and
// fails only the request at fault.
#include "engine/step_executor.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "engine_test_util.h"

namespace strata::testing {
namespace {

constexpr int32_t kBlockSize = 4;

// A prefill of `prompt` (all of it, sampling) for request `id`, whose
// blocks are [first_block, ...).
ScheduledRequest prefill(RequestId id, std::vector<int32_t> prompt, int32_t first_block) {
  ScheduledRequest s;
  s.request_id = id;
  s.num_new_tokens = static_cast<int32_t>(prompt.size());
  const int32_t num_blocks = (s.num_new_tokens + kBlockSize - 1) / kBlockSize + 1;
  s.block_table.resize(static_cast<size_t>(num_blocks));
  std::iota(s.block_table.begin(), s.block_table.end(), first_block);
  s.is_sampling = true;
  s.is_prefill = true;
  NewRequestData d;
  d.sampling.temperature = 0.0f;
  d.prompt_tokens = prompt;
  s.new_request = std::move(d);
  s.new_token_ids = std::move(prompt);
  return s;
}

StepPlan plan_of(std::vector<ScheduledRequest> requests) {
  StepPlan p;
  p.block_size = kBlockSize;
  for (const ScheduledRequest& s : requests) p.num_scheduled_tokens += s.num_new_tokens;
  p.requests = std::move(requests);
  return p;
}

KvStorage make_storage() {
  Result<KvStorage> storage = KvStorage::create(peaky_model().weights->config(), kBlockSize, 64);
  EXPECT_TRUE(storage.is_ok());
  return std::move(*storage);
}

struct Fixture {
  Fixture()
      : storage(make_storage()),
        pool(2),
        runner(*peaky_model().weights, storage, pool, 256),
        executor(runner, static_cast<int32_t>(peaky_model().weights->config().vocab_size)) {}
  KvStorage storage;
  ThreadPool pool;
  ModelRunner runner;
  StepExecutor executor;
};

int32_t sampled_token(const ExecutedStep& e, RequestId id) {
  for (const SampledToken& t : e.result.sampled) {
    if (t.request_id == id) return t.token;
  }
  return -1;
}

TEST(ToForwardBatch, FlattensThePlanInOrder) {
  ScheduledRequest decode;
  decode.request_id = 1;
  decode.num_computed_tokens = 3;
  decode.num_new_tokens = 1;
  decode.new_token_ids = {42};
  decode.block_table = {0};
  decode.is_sampling = true;
  ScheduledRequest chunk;
  chunk.request_id = 2;
  chunk.num_new_tokens = 6;
  chunk.new_token_ids = {1, 2, 3, 4, 5, 6};
  chunk.block_table = {1, 2};
  chunk.is_sampling = true;
  const ForwardBatch b = to_forward_batch(plan_of({decode, chunk}));
  ASSERT_EQ(b.num_tokens(), 7);
  EXPECT_EQ(b.tokens, (std::vector<int32_t>{42, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(b.positions, (std::vector<int32_t>{3, 0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(b.seq_index, (std::vector<int32_t>{0, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(b.slot_mapping, (std::vector<int32_t>{3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(b.logits_indices, (std::vector<int32_t>{0, 6}));
}

TEST(StepExecutor, ThePlanAloneIsEnoughAndTwoExecutorsAgree) {
  STRATA_REQUIRE_MODEL();
  Fixture a, b;
  const StepPlan plan =
      plan_of({prefill(1, random_prompt(1, 9), 0), prefill(2, random_prompt(2, 5), 8)});
  const ExecutedStep ea = a.executor.execute(plan);
  const ExecutedStep eb = b.executor.execute(plan);
  ASSERT_EQ(ea.result.sampled.size(), 2u);
  EXPECT_TRUE(ea.result.failed_ids.empty());
  EXPECT_EQ(sampled_token(ea, 1), sampled_token(eb, 1));
  EXPECT_EQ(sampled_token(ea, 2), sampled_token(eb, 2));
  EXPECT_EQ(a.executor.num_samplers(), 2u);
  // The next plan's finished_ids drop the state, even with nothing to run.
  StepPlan done = plan_of({});
  done.finished_ids = {1, 2};
  a.executor.execute(done);
  EXPECT_EQ(a.executor.num_samplers(), 0u);
}

TEST(StepExecutor, MaskedStopTokensAreNeverSampled) {
  STRATA_REQUIRE_MODEL();
  const std::vector<int32_t> prompt = random_prompt(3, 11);
  Fixture plain;
  const int32_t greedy = sampled_token(plain.executor.execute(plan_of({prefill(1, prompt, 0)})), 1);
  ASSERT_GE(greedy, 0);
  Fixture masked;
  ScheduledRequest s = prefill(1, prompt, 0);
  s.new_request->stop_token_ids = {greedy};
  s.masks_stop_tokens = true;
  const int32_t other = sampled_token(masked.executor.execute(plan_of({s})), 1);
  EXPECT_GE(other, 0);
  EXPECT_NE(other, greedy);
  // Without the flag the stop token is an ordinary candidate.
  Fixture unmasked;
  s.masks_stop_tokens = false;
  EXPECT_EQ(sampled_token(unmasked.executor.execute(plan_of({s})), 1), greedy);
}

TEST(StepExecutor, OnlyTheFaultyRequestFails) {
  STRATA_REQUIRE_MODEL();
  Fixture f;
  ScheduledRequest bad_params = prefill(1, random_prompt(4, 6), 0);
  bad_params.new_request->sampling.top_p = 3.0f;
  ScheduledRequest never_introduced = prefill(2, random_prompt(5, 6), 8);
  never_introduced.new_request.reset();
  ScheduledRequest bad_slot = prefill(3, random_prompt(6, 6), 16);
  bad_slot.block_table.clear();  // positions not covered: the forward fails
  const ScheduledRequest good = prefill(4, random_prompt(7, 6), 24);
  const ExecutedStep e =
      f.executor.execute(plan_of({bad_params, never_introduced, bad_slot, good}));
  EXPECT_EQ(e.errors.at(1).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.errors.at(1).message().find("top_p"), std::string::npos);
  EXPECT_EQ(e.errors.at(2).code(), StatusCode::kInternal);
  EXPECT_FALSE(e.errors.at(3).is_ok());
  EXPECT_FALSE(e.errors.count(4));
  EXPECT_EQ(e.result.sampled.size(), 1u);
  Fixture alone;
  EXPECT_EQ(sampled_token(e, 4), sampled_token(alone.executor.execute(plan_of({good})), 4));
}

}  // namespace
}  // namespace strata::testing
