#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness.h"

namespace strata {
namespace {

using testing::Harness;
using testing::make_spec;
using testing::reference_output;
using Ids = std::vector<RequestId>;

SchedulerOptions opts(int64_t max_batched, int32_t max_seqs = 256,
                      SchedulingPolicy policy = SchedulingPolicy::kFcfs) {
  SchedulerOptions o;
  o.max_model_len = 4096;
  o.max_num_batched_tokens = max_batched;
  o.max_num_seqs = max_seqs;
  o.policy = policy;
  return o;
}

Ids plan_ids(const StepPlan& plan) {
  Ids ids;
  for (const ScheduledRequest& r : plan.requests) ids.push_back(r.request_id);
  return ids;
}

std::vector<int32_t> plan_counts(const StepPlan& plan) {
  std::vector<int32_t> n;
  for (const ScheduledRequest& r : plan.requests) n.push_back(r.num_new_tokens);
  return n;
}

void expect_reference_outputs(const Harness& h, const std::vector<RequestSpec>& specs) {
  for (const RequestSpec& s : specs) {
    auto it = h.outputs.find(s.id);
    ASSERT_NE(it, h.outputs.end()) << s.id;
    EXPECT_EQ(it->second, reference_output(s.prompt_tokens, it->second.size())) << s.id;
  }
}

TEST(SchedulerOptionsTest, ValidatesAndParses) {
  // No defaults of its own: the engine sets every size (EngineOptions).
  EXPECT_FALSE(SchedulerOptions().validate().is_ok());
  EXPECT_TRUE(opts(64).validate().is_ok());
  SchedulerOptions o = opts(64);
  o.max_num_batched_tokens = 0;
  EXPECT_FALSE(o.validate().is_ok());
  o = opts(16);
  EXPECT_EQ(o.effective_max_num_seqs(), 16);
  EXPECT_EQ(*parse_scheduling_policy("priority"), SchedulingPolicy::kPriority);
  EXPECT_EQ(*parse_scheduling_policy("fcfs"), SchedulingPolicy::kFcfs);
  EXPECT_FALSE(parse_scheduling_policy("lifo").is_ok());
  o = opts(64);
  o.prefill_cost_context_len = -1;
  EXPECT_FALSE(o.validate().is_ok());
}

TEST(SchedulerTest, RejectsBadRequestsAtAdmission) {
  SchedulerOptions o = opts(64);
  o.max_model_len = 40;
  Harness h(4, 4, o);  // 16 token slots
  EXPECT_EQ(h.sched.add_request(make_spec(1, 0, 4)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.sched.add_request(make_spec(1, 4, 0)).code(), StatusCode::kInvalidArgument);
  RequestSpec bad_min = make_spec(1, 4, 2);
  bad_min.min_tokens = 3;
  EXPECT_EQ(h.sched.add_request(bad_min).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.sched.add_request(make_spec(1, 30, 11)).code(), StatusCode::kInvalidArgument);
  // 10 + 8 - 1 = 17 K/V slots > 16: cannot fit even the empty pool.
  // A request that can never run is the client's to change: invalid.
  Status s = h.sched.add_request(make_spec(1, 10, 8));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("--kv-cache-memory"), std::string::npos);
  EXPECT_TRUE(h.sched.add_request(make_spec(1, 10, 7)).is_ok());
  EXPECT_EQ(h.sched.add_request(make_spec(1, 2, 2)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.sched.num_waiting(), 1);
}

TEST(SchedulerTest, BudgetAccountingAndDecodesFirst) {
  Harness h(64, 4, opts(8));
  for (RequestId id = 1; id <= 3; ++id)
    ASSERT_TRUE(h.sched.add_request(make_spec(id, 5, 3)).is_ok());
  StepPlan p1 = h.step();
  EXPECT_EQ(plan_ids(p1), (Ids{1, 2}));
  EXPECT_EQ(plan_counts(p1), (std::vector<int32_t>{5, 3}));
  EXPECT_EQ(p1.num_scheduled_tokens, 8);
  EXPECT_TRUE(p1.requests[0].is_sampling);
  EXPECT_FALSE(p1.requests[1].is_sampling);
  StepPlan p2 = h.step();
  EXPECT_EQ(plan_ids(p2), (Ids{1, 2, 3}));
  EXPECT_EQ(plan_counts(p2), (std::vector<int32_t>{1, 2, 5}));
  EXPECT_EQ(p2.num_scheduled_tokens, 8);
  EXPECT_FALSE(p2.requests[0].is_prefill);
  EXPECT_EQ(p2.requests[1].num_computed_tokens, 3);
  StepPlan p3 = h.step();
  EXPECT_EQ(plan_counts(p3), (std::vector<int32_t>{1, 1, 1}));
  EXPECT_EQ(h.finished.at(1), FinishReason::kLength);
  EXPECT_EQ(h.outputs.at(1).size(), 3u);
  h.run_to_completion();
  EXPECT_EQ(h.kv.num_free_blocks(), 64);
}

TEST(SchedulerTest, PrefillChunkIsCappedOnlyWhileRequestsDecode) {
  SchedulerOptions o = opts(64);
  o.max_prefill_tokens = 4;
  Harness h(64, 4, o);
  // Alone, a long prompt prefills at the full budget.
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 40, 20)).is_ok());
  StepPlan p1 = h.step();
  EXPECT_EQ(plan_counts(p1), (std::vector<int32_t>{40}));
  // Once request 1 decodes, request 2's prompt is computed 4 tokens a step,
  // split across its chunks, while 1 still gets its token every step.
  ASSERT_TRUE(h.sched.add_request(make_spec(2, 10, 5)).is_ok());
  ASSERT_TRUE(h.sched.add_request(make_spec(3, 10, 5)).is_ok());
  StepPlan p2 = h.step();
  EXPECT_EQ(plan_ids(p2), (Ids{1, 2}));
  EXPECT_EQ(plan_counts(p2), (std::vector<int32_t>{1, 4}));
  StepPlan p3 = h.step();
  EXPECT_EQ(plan_counts(p3), (std::vector<int32_t>{1, 4}));
  StepPlan p4 = h.step();  // 2 finishes its prompt (2 left), 3 gets the rest of the chunk
  EXPECT_EQ(plan_ids(p4), (Ids{1, 2, 3}));
  EXPECT_EQ(plan_counts(p4), (std::vector<int32_t>{1, 2, 2}));
  // The chunk limit does not cap how many requests run at once.
  EXPECT_EQ(h.sched.num_running(), 3);
  h.run_to_completion();
  EXPECT_EQ(h.kv.num_free_blocks(), 64);
}

// With prefill_cost_context_len = L, a prompt token at position p counts
// 1 + p / L against max_prefill_tokens: chunks shrink as the prompt's
// context grows, and still one token goes when even one costs more than the
// whole budget.
TEST(SchedulerTest, PrefillChunksShrinkWithTheirContextCost) {
  SchedulerOptions o = opts(512);
  o.max_prefill_tokens = 10;
  o.prefill_cost_context_len = 100;
  Harness h(2048, 16, o);
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 4, 1000)).is_ok());
  EXPECT_EQ(plan_counts(h.step()), (std::vector<int32_t>{4}));  // alone: uncapped
  ASSERT_TRUE(h.sched.add_request(make_spec(2, 1200, 5)).is_ok());
  // Positions 0..8 cost 9 + 36/100 = 9.36 <= 10; 0..9 would cost 10.45.
  StepPlan p = h.step();
  EXPECT_EQ(plan_ids(p), (Ids{1, 2}));
  EXPECT_EQ(plan_counts(p), (std::vector<int32_t>{1, 9}));
  // Positions 9..17 would cost 9 + (81 + 36) / 100 = 10.17; 9..16 cost 9.00.
  p = h.step();
  EXPECT_EQ(plan_counts(p), (std::vector<int32_t>{1, 8}));
  // Later chunks are smaller: sum the chunk sizes until position 200.
  int64_t pos = 17;
  int32_t last = 0;
  while (pos < 200) {
    p = h.step();
    ASSERT_EQ(p.requests.size(), 2u);
    last = p.requests[1].num_new_tokens;
    // The chunk fits the budget and one more token would not.
    const double len = 100.0;
    auto cost = [&](int64_t start, int64_t n) {
      return n + (n * static_cast<double>(start) + n * (n - 1) / 2.0) / len;
    };
    EXPECT_LE(cost(pos, last), 10.0) << pos;
    EXPECT_GT(cost(pos, last + 1), 10.0) << pos;
    pos += last;
  }
  EXPECT_EQ(last, 3);  // around position 200 a token costs ~3
  // Past position 900 one token costs more than 10: still one per step.
  while (pos < 1000) {
    p = h.step();
    pos += p.requests[1].num_new_tokens;
  }
  p = h.step();
  EXPECT_EQ(plan_counts(p), (std::vector<int32_t>{1, 1}));
  h.run_to_completion();
  EXPECT_EQ(h.kv.num_free_blocks(), 2048);
}

TEST(SchedulerTest, RunningDecodeGoesBeforeABetterRunningPrefill) {
  Harness h(64, 4, opts(16, 256, SchedulingPolicy::kPriority));
  ASSERT_TRUE(h.sched.add_request(make_spec(2, 2, 50, /*priority=*/1)).is_ok());
  h.step();
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 30, 5, /*priority=*/0)).is_ok());
  StepPlan p2 = h.step();
  EXPECT_EQ(plan_ids(p2), (Ids{2, 1}));
  EXPECT_EQ(plan_counts(p2), (std::vector<int32_t>{1, 15}));
  StepPlan p3 = h.step();
  EXPECT_EQ(h.sched.running_ids(), (Ids{1, 2}));  // policy order
  EXPECT_EQ(plan_ids(p3), (Ids{2, 1}));           // but the decode first
  EXPECT_EQ(plan_counts(p3), (std::vector<int32_t>{1, 15}));
  EXPECT_TRUE(p3.requests[1].is_sampling);
}

TEST(SchedulerTest, ChunkedPrefillPositionsAndBlockTables) {
  Harness h(64, 4, opts(8));
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 20, 2)).is_ok());
  const int64_t starts[] = {0, 8, 16};
  const int32_t counts[] = {8, 8, 4};
  const size_t blocks[] = {2, 4, 5};
  for (int i = 0; i < 3; ++i) {
    StepPlan p = h.step();
    ASSERT_EQ(p.requests.size(), 1u);
    const ScheduledRequest& r = p.requests[0];
    EXPECT_EQ(r.num_computed_tokens, starts[i]);
    EXPECT_EQ(r.num_new_tokens, counts[i]);
    EXPECT_EQ(r.block_table.size(), blocks[i]);
    EXPECT_EQ(r.is_sampling, i == 2);
    EXPECT_TRUE(r.is_prefill);
    EXPECT_EQ(r.is_first_step(), i == 0);
    EXPECT_EQ(r.new_token_ids.front(), 100 + starts[i]);
  }
  EXPECT_EQ(h.outputs.at(1).size(), 1u);
}

TEST(SchedulerTest, FcfsFinishesInArrivalOrder) {
  Harness h(64, 4, opts(64, /*max_seqs=*/2));
  std::vector<RequestSpec> specs;
  for (RequestId id = 1; id <= 5; ++id) {
    specs.push_back(make_spec(id, 6, 4));
    ASSERT_TRUE(h.sched.add_request(specs.back()).is_ok());
  }
  h.run_to_completion();
  EXPECT_EQ(h.finish_order, (Ids{1, 2, 3, 4, 5}));
  expect_reference_outputs(h, specs);
}

TEST(SchedulerTest, FcfsHeadOfLineIsNotOvertakenAndVictimKeepsItsPlace) {
  Harness h(6, 4, opts(64));
  std::vector<RequestSpec> specs = {make_spec(1, 12, 8), make_spec(2, 12, 4), make_spec(3, 2, 2)};
  for (const auto& s : specs) ASSERT_TRUE(h.sched.add_request(s).is_ok());
  StepPlan p1 = h.step();
  EXPECT_EQ(plan_ids(p1), (Ids{1, 2}));  // the pool is full; 3 waits
  StepPlan p2 = h.step();
  // Request 1 needs a 4th block: the latest arrival (2) is the victim.
  EXPECT_EQ(p2.preempted_ids, (Ids{2}));
  EXPECT_EQ(plan_ids(p2), (Ids{1}));
  EXPECT_EQ(h.sched.waiting_ids(), (Ids{2, 3}));  // 2 keeps its place ahead of 3
  EXPECT_EQ(h.sched.stats().num_preemptions, 1);
  while (h.sched.has_unfinished_requests()) {
    StepPlan p = h.step();
    for (RequestId id : plan_ids(p)) {
      if (id == 3) {
        const Request* r2 = h.sched.find(2);
        EXPECT_TRUE(r2 == nullptr || r2->status == RequestStatus::kRunning);
      }
    }
    h.check_invariants();
  }
  expect_reference_outputs(h, specs);
  EXPECT_EQ(h.outputs.at(1).size(), 8u);
  EXPECT_EQ(h.outputs.at(2).size(), 4u);
  EXPECT_EQ(h.kv.num_free_blocks(), 6);
}

// Pipeline micro-batches: each plan skips requests whose step is in flight
// and takes at most max_requests; a request in flight is never a victim (a
// request that needs a block preempts itself rather than one in flight).
TEST(SchedulerTest, MicroBatchesAreDisjointAndInFlightIsNeverPreempted) {
  Harness h(6, 4, opts(64));
  std::vector<RequestSpec> specs = {make_spec(1, 12, 8), make_spec(2, 12, 4)};
  for (const auto& s : specs) ASSERT_TRUE(h.sched.add_request(s).is_ok());
  const auto finish = [&h](const StepPlan& plan) {
    h.check_plan(plan);
    for (const RequestUpdate& u : h.sched.update(plan, h.runner.run(plan)).updates) {
      if (u.has_new_token) h.outputs[u.request_id].push_back(u.new_token);
      if (u.finish_reason != FinishReason::kNone) h.finished[u.request_id] = u.finish_reason;
    }
  };
  const StepPlan a = h.sched.schedule_micro_batch(0, 1);
  EXPECT_EQ(plan_ids(a), (Ids{1}));
  const StepPlan b = h.sched.schedule_micro_batch(0, 1);
  EXPECT_EQ(plan_ids(b), (Ids{2}));                         // 1 is in flight
  EXPECT_TRUE(h.sched.schedule_micro_batch(0, 2).empty());  // both are
  finish(a);
  // 1 needs a 4th block; the latest arrival (2) would be the victim, but
  // its step is in flight: 1 goes back to waiting itself.
  const StepPlan c = h.sched.schedule_micro_batch(0, 1);
  EXPECT_TRUE(c.empty());
  EXPECT_EQ(c.preempted_ids, (Ids{1}));
  EXPECT_EQ(h.sched.running_ids(), (Ids{2}));
  finish(b);
  h.run_to_completion();
  expect_reference_outputs(h, specs);
  EXPECT_EQ(h.outputs.at(1).size(), 8u);
  EXPECT_EQ(h.outputs.at(2).size(), 4u);
  EXPECT_EQ(h.kv.num_free_blocks(), 6);
}

// Pool of 7 blocks of 4; three 8-token prompts take 6. When the decodes
// need a third block each, the victim is chosen by the policy.
Ids first_victims(SchedulingPolicy policy) {
  Harness h(7, 4, opts(64, 256, policy));
  EXPECT_TRUE(h.sched.add_request(make_spec(1, 8, 6, /*priority=*/0)).is_ok());
  EXPECT_TRUE(h.sched.add_request(make_spec(2, 8, 6, /*priority=*/5)).is_ok());
  EXPECT_TRUE(h.sched.add_request(make_spec(3, 8, 6, /*priority=*/1)).is_ok());
  StepPlan p1 = h.step();
  EXPECT_EQ(p1.requests.size(), 3u);
  StepPlan p2 = h.step();
  h.run_to_completion();
  EXPECT_EQ(h.finished.size(), 3u);
  return p2.preempted_ids;
}

TEST(SchedulerTest, PreemptionVictimIsLowestPriorityThenLatestArrival) {
  EXPECT_EQ(first_victims(SchedulingPolicy::kPriority), (Ids{2}));
  EXPECT_EQ(first_victims(SchedulingPolicy::kFcfs), (Ids{3}));
}

TEST(SchedulerTest, PriorityOrder) {
  Harness h(64, 4, opts(64, /*max_seqs=*/1, SchedulingPolicy::kPriority));
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 4, 2, 2)).is_ok());
  ASSERT_TRUE(h.sched.add_request(make_spec(2, 4, 2, 0)).is_ok());
  ASSERT_TRUE(h.sched.add_request(make_spec(3, 4, 2, 1)).is_ok());
  ASSERT_TRUE(h.sched.add_request(make_spec(4, 4, 2, 0)).is_ok());
  EXPECT_EQ(h.sched.waiting_ids(), (Ids{2, 4, 3, 1}));
  h.run_to_completion();
  EXPECT_EQ(h.finish_order, (Ids{2, 4, 3, 1}));
}

TEST(SchedulerTest, WaitingHigherPriorityPreemptsRunningLowerPriority) {
  Harness h(64, 4, opts(64, /*max_seqs=*/1, SchedulingPolicy::kPriority));
  std::vector<RequestSpec> specs = {make_spec(1, 10, 6, /*priority=*/5),
                                    make_spec(2, 5, 3, /*priority=*/0)};
  ASSERT_TRUE(h.sched.add_request(specs[0]).is_ok());
  h.step();
  h.step();
  ASSERT_TRUE(h.sched.add_request(specs[1]).is_ok());
  StepPlan p = h.step();
  EXPECT_EQ(p.preempted_ids, (Ids{1}));
  EXPECT_EQ(plan_ids(p), (Ids{2}));
  EXPECT_EQ(h.sched.waiting_ids(), (Ids{1}));
  h.run_to_completion();
  EXPECT_EQ(h.finish_order, (Ids{2, 1}));
  expect_reference_outputs(h, specs);
  EXPECT_EQ(h.outputs.at(1).size(), 6u);
  // The victim's recompute hit its own cached blocks (10 prompt + 2 output
  // tokens -> 2 full blocks of 4).
  EXPECT_GE(h.sched.stats().prefix_hit_tokens, 8);
}

TEST(SchedulerTest, EqualPriorityDoesNotPreemptAndFcfsNeverDoes) {
  for (SchedulingPolicy policy : {SchedulingPolicy::kPriority, SchedulingPolicy::kFcfs}) {
    Harness h(64, 4, opts(64, /*max_seqs=*/1, policy));
    ASSERT_TRUE(h.sched.add_request(make_spec(1, 10, 6, 0)).is_ok());
    h.step();
    ASSERT_TRUE(h.sched.add_request(make_spec(2, 5, 3, policy == SchedulingPolicy::kFcfs ? -5 : 0))
                    .is_ok());
    StepPlan p = h.step();
    EXPECT_TRUE(p.preempted_ids.empty());
    EXPECT_EQ(plan_ids(p), (Ids{1}));
    h.run_to_completion();
    EXPECT_EQ(h.finish_order, (Ids{1, 2}));
  }
}

TEST(SchedulerTest, PriorityAgingPreventsStarvation) {
  SchedulerOptions o = opts(64, /*max_seqs=*/1, SchedulingPolicy::kPriority);
  o.priority_aging_ns = 1000;  // the harness clock advances 1000 ns per step
  Harness h(64, 4, o);
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 4, 2, /*priority=*/10)).is_ok());
  RequestId next = 100;
  int steps = 0;
  while (!h.finished.count(1) && steps < 200) {
    ASSERT_TRUE(h.sched.add_request(make_spec(next++, 4, 2, /*priority=*/0)).is_ok());
    h.step();
    ++steps;
  }
  EXPECT_TRUE(h.finished.count(1));
  EXPECT_GT(steps, 10);  // it did wait for better-priority work first
  EXPECT_LT(steps, 40);
}

TEST(SchedulerTest, StopTokensMinTokensAndMaxTokens) {
  const RequestSpec base = make_spec(1, 7, 10);
  const std::vector<int32_t> ref = reference_output(base.prompt_tokens, 10);
  auto run = [&](int32_t min_tokens, bool has_stop, int stop_index) {
    Harness h(64, 4, opts(64));
    RequestSpec s = base;
    s.min_tokens = min_tokens;
    if (has_stop) s.stop_token_ids = {ref[stop_index]};
    EXPECT_TRUE(h.sched.add_request(s).is_ok());
    h.run_to_completion();
    EXPECT_EQ(h.kv.num_free_blocks(), 64);
    return std::make_pair(h.finished.at(1), h.outputs.at(1).size());
  };
  // Pick a stop token that does not occur earlier in the reference.
  int k = 3;
  while (std::find(ref.begin(), ref.begin() + k, ref[k]) != ref.begin() + k) ++k;
  ASSERT_LT(k, 9);
  EXPECT_EQ(run(0, true, k), std::make_pair(FinishReason::kStop, static_cast<size_t>(k + 1)));
  // min_tokens = k + 1: the stop token at output k + 1 is an ordinary token.
  auto [reason, n] = run(k + 1, true, k);
  EXPECT_EQ(n > static_cast<size_t>(k + 1), true);
  (void)reason;
  // No stop set (the engine leaves EOS out under ignore_eos): max_tokens.
  EXPECT_EQ(run(0, false, k), std::make_pair(FinishReason::kLength, size_t{10}));
}

TEST(SchedulerTest, AbortFreesBlocksAtOnce) {
  Harness h(16, 4, opts(64));
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 9, 20)).is_ok());
  ASSERT_TRUE(h.sched.add_request(make_spec(2, 9, 20)).is_ok());
  h.step();
  EXPECT_EQ(h.kv.num_free_blocks(), 16 - 6);
  EXPECT_TRUE(h.sched.finish_request(1, FinishReason::kAbort));
  EXPECT_EQ(h.kv.num_free_blocks(), 16 - 3);
  EXPECT_FALSE(h.sched.finish_request(1, FinishReason::kAbort));
  EXPECT_EQ(h.sched.find(1), nullptr);
  StepPlan p = h.step();
  EXPECT_EQ(plan_ids(p), (Ids{2}));
  // Abort between schedule() and update(): the update skips it.
  StepPlan q = h.sched.schedule();
  h.check_plan(q);
  StepResult res = h.runner.run(q);
  EXPECT_TRUE(h.sched.finish_request(2, FinishReason::kAbort));
  EXPECT_TRUE(h.sched.update(q, res).updates.empty());
  EXPECT_EQ(h.kv.num_free_blocks(), 16);
  EXPECT_FALSE(h.sched.has_unfinished_requests());
}

TEST(SchedulerTest, FailedRequestFinishesWithErrorAndOthersContinue) {
  Harness h(16, 4, opts(64));
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 5, 3)).is_ok());
  ASSERT_TRUE(h.sched.add_request(make_spec(2, 5, 3)).is_ok());
  StepPlan p = h.sched.schedule();
  h.check_plan(p);
  StepResult res = h.runner.run(p);
  res.failed_ids = {1};
  StepOutput out = h.sched.update(p, res);
  ASSERT_EQ(out.updates.size(), 2u);
  EXPECT_EQ(out.updates[0].finish_reason, FinishReason::kError);
  EXPECT_FALSE(out.updates[0].has_new_token);
  EXPECT_TRUE(out.updates[1].has_new_token);
  EXPECT_EQ(h.sched.running_ids(), (Ids{2}));
  h.run_to_completion();
  EXPECT_EQ(h.kv.num_free_blocks(), 16);
}

TEST(SchedulerTest, ParallelSamplingSiblingsShareThePromptBlocks) {
  Harness h(64, 4, opts(8));
  std::vector<RequestSpec> specs;
  for (RequestId id : {10, 11, 12}) {
    RequestSpec s = make_spec(id, 20, 3, 0, /*first_token=*/500);
    if (id != 10) s.prefix_source_id = 10;
    specs.push_back(s);
    ASSERT_TRUE(h.sched.add_request(s).is_ok());
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(plan_ids(h.step()), (Ids{10}));
  StepPlan p = h.step();  // prompt done: siblings admitted with 16 cached tokens
  EXPECT_EQ(plan_ids(p), (Ids{10, 11, 12}));
  EXPECT_EQ(plan_counts(p), (std::vector<int32_t>{1, 4, 3}));
  EXPECT_EQ(h.sched.find(11)->num_cached_prompt_tokens, 16);
  EXPECT_EQ(h.sched.find(12)->num_cached_prompt_tokens, 16);
  EXPECT_EQ(p.requests[1].block_table[0], p.requests[0].block_table[0]);
  h.run_to_completion();
  expect_reference_outputs(h, specs);
  EXPECT_EQ(h.outputs.at(11), h.outputs.at(10));  // greedy fake: same tokens
  EXPECT_EQ(h.kv.num_free_blocks(), 64);
}

TEST(SchedulerTest, StatsCountRunningWaitingAndPrefixTokens) {
  Harness h(64, 4, opts(64, /*max_seqs=*/1));
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 9, 1, 0, 7)).is_ok());
  ASSERT_TRUE(h.sched.add_request(make_spec(2, 9, 1, 0, 7)).is_ok());
  h.step();
  SchedulerStats s = h.sched.stats();
  EXPECT_EQ(s.num_waiting, 1);
  EXPECT_EQ(s.num_running, 0);  // finished after one token
  EXPECT_EQ(s.prefix_query_tokens, 9);
  EXPECT_EQ(s.prefix_hit_tokens, 0);
  h.step();
  s = h.sched.stats();
  EXPECT_EQ(s.prefix_query_tokens, 18);
  EXPECT_EQ(s.prefix_hit_tokens, 8);
  EXPECT_EQ(s.num_steps, 2);
  EXPECT_DOUBLE_EQ(s.kv_usage, 0.0);
}

// A drafter that proposes as many 7s as allowed, after a match of
// `match` tokens, and a selector that keeps a fixed number of each
// request's proposals.
struct SevensDrafter : Drafter {
  int32_t match = 5;  // class 2
  int32_t propose(uint64_t, std::span<const int32_t>, int64_t, int32_t max_drafts,
                  std::vector<int32_t>* out) override {
    out->insert(out->end(), static_cast<size_t>(max_drafts), 7);
    return match;
  }
};
struct KeepSome : DraftSelector {
  int32_t keep = 1;
  int32_t num_decoding = -1;
  std::vector<DraftCandidate> seen;
  ClassRecords every_request;
  void select(int32_t decoding, const ClassRecords& all,
              std::span<DraftCandidate> candidates) override {
    num_decoding = decoding;
    every_request = all;
    seen.assign(candidates.begin(), candidates.end());
    for (DraftCandidate& c : candidates) c.num_selected = std::min(keep, c.num_proposed);
  }
};

TEST(SchedulerTest, TheDraftSelectorTrimsProposalsAndPromptsGetTheRest) {
  Harness h(64, 4, opts(12));
  SevensDrafter drafter;
  KeepSome selector;
  h.sched.set_drafter(&drafter);
  h.sched.set_draft_selector(&selector);
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 4, 20)).is_ok());
  ASSERT_TRUE(h.sched.add_request(make_spec(2, 4, 20)).is_ok());
  StepPlan p = h.sched.schedule(4);  // both prompts
  h.sched.update(p, h.runner.run(p));
  EXPECT_EQ(selector.num_decoding, -1);  // nothing proposed, nothing asked
  ASSERT_TRUE(h.sched.add_request(make_spec(3, 30, 5)).is_ok());
  p = h.sched.schedule(4);
  // Two decodes proposed 4 drafts each and keep 1; the prompt gets the
  // budget the other 6 gave back: 12 - 2 x 2.
  EXPECT_EQ(selector.num_decoding, 2);
  ASSERT_EQ(selector.seen.size(), 2u);
  EXPECT_EQ(selector.seen[0].request_id, 1u);
  EXPECT_EQ(selector.seen[0].num_proposed, 4);
  ASSERT_EQ(p.requests.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(p.requests[i].num_draft_tokens, 1);
    EXPECT_EQ(p.requests[i].num_new_tokens, 2);
    EXPECT_EQ(p.requests[i].new_token_ids.back(), 7);
  }
  EXPECT_EQ(p.requests[2].request_id, 3u);
  EXPECT_EQ(p.requests[2].num_new_tokens, 8);
  EXPECT_EQ(p.num_scheduled_tokens, 12);
  h.sched.update(p, h.runner.run(p));
  // The fake runner accepts no draft: one rejection in each request's
  // record of the proposals' class (a match of 5: class 2), which the next
  // selection sees, and two in every request's.
  EXPECT_EQ(selector.seen[0].match_class, 2);
  EXPECT_DOUBLE_EQ(h.sched.find(1)->draft_records.of[2].rejected, 1.0);
  EXPECT_DOUBLE_EQ(h.sched.find(1)->draft_records.of[2].accepted, 0.0);
  EXPECT_DOUBLE_EQ(h.sched.find(1)->draft_records.total().rejected, 1.0);
  selector.keep = 0;
  p = h.sched.schedule(4);
  EXPECT_DOUBLE_EQ(selector.seen[0].record.rejected, 1.0);
  EXPECT_DOUBLE_EQ(selector.every_request.of[2].rejected, 2.0);
  EXPECT_DOUBLE_EQ(selector.every_request.total().rejected, 2.0);
  EXPECT_EQ(p.requests[0].num_draft_tokens, 0);
  EXPECT_EQ(p.requests[0].num_new_tokens, 1);
  // The dropped proposal became the request's shadow: the next token is
  // not a 7, so it counts as a rejection, after the step's decay.
  EXPECT_EQ(p.requests[0].new_token_ids.size(), 1u);
  h.sched.update(p, h.runner.run(p));
  EXPECT_DOUBLE_EQ(h.sched.find(1)->draft_records.of[2].rejected, AcceptanceRecord::kDecay + 1.0);
  EXPECT_TRUE(h.sched.find(1)->shadow_drafts.empty());
}

TEST(SchedulerTest, DraftsAreRecordedInTheClassOfTheirMatch) {
  Harness h(64, 4, opts(12));
  SevensDrafter drafter;
  KeepSome selector;
  selector.keep = 2;
  h.sched.set_drafter(&drafter);
  h.sched.set_draft_selector(&selector);
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 4, 40)).is_ok());
  StepPlan p = h.sched.schedule(4);  // the prompt
  h.sched.update(p, h.runner.run(p));
  // Verified drafts after a match of 1 (class 0), then of 20 (class 4);
  // a shadow (nothing kept) after a match of 3 (class 1). Every update()
  // first decays every request's records by kEveryRequestDecay; a decode
  // decays the request's by kDecay.
  const double d = AcceptanceRecord::kDecay;
  const double e = ClassRecords::kEveryRequestDecay;
  drafter.match = 1;
  p = h.sched.schedule(4);
  EXPECT_EQ(selector.seen[0].match_class, 0);
  EXPECT_EQ(p.requests[0].num_draft_tokens, 2);
  h.sched.update(p, h.runner.run(p));
  drafter.match = 20;
  p = h.sched.schedule(4);
  EXPECT_EQ(selector.seen[0].match_class, 4);
  EXPECT_DOUBLE_EQ(selector.seen[0].record.rejected, 0.0);  // nothing in class 4 yet
  h.sched.update(p, h.runner.run(p));
  drafter.match = 3;
  selector.keep = 0;
  p = h.sched.schedule(4);
  EXPECT_EQ(selector.seen[0].match_class, 1);
  h.sched.update(p, h.runner.run(p));  // the shadow's 7 is not the next token
  const ClassRecords& mine = h.sched.find(1)->draft_records;
  EXPECT_DOUBLE_EQ(mine.of[0].rejected, d * d);
  EXPECT_DOUBLE_EQ(mine.of[4].rejected, d);
  EXPECT_DOUBLE_EQ(mine.of[1].rejected, 1.0);
  EXPECT_DOUBLE_EQ(mine.of[2].rejected + mine.of[3].rejected, 0.0);
  EXPECT_DOUBLE_EQ(mine.total().accepted, 0.0);
  p = h.sched.schedule(4);
  EXPECT_DOUBLE_EQ(selector.every_request.of[0].rejected, e * e);
  EXPECT_DOUBLE_EQ(selector.every_request.of[4].rejected, e);
  EXPECT_DOUBLE_EQ(selector.every_request.of[1].rejected, 1.0);
}

TEST(SchedulerTest, WithoutASelectorVerifiedDraftsAreRecordedInTheirClassToo) {
  Harness h(64, 4, opts(12));
  SevensDrafter drafter;
  drafter.match = 9;  // class 3
  h.sched.set_drafter(&drafter);
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 4, 40)).is_ok());
  StepPlan p = h.sched.schedule(2);  // the prompt
  h.sched.update(p, h.runner.run(p));
  p = h.sched.schedule(2);
  ASSERT_EQ(p.requests[0].num_draft_tokens, 2);  // every proposal verified
  h.sched.update(p, h.runner.run(p));
  const ClassRecords& mine = h.sched.find(1)->draft_records;
  EXPECT_DOUBLE_EQ(mine.of[3].rejected, 1.0);
  EXPECT_DOUBLE_EQ(mine.total().rejected, 1.0);
}

// Proposes the fake model's true continuation, with its `wrong_at`-th
// token (if any) replaced.
struct OracleDrafter : Drafter {
  int32_t wrong_at = -1;
  int32_t propose(uint64_t, std::span<const int32_t> tokens, int64_t, int32_t max_drafts,
                  std::vector<int32_t>* out) override {
    std::vector<int32_t> next = testing::reference_output(tokens, max_drafts);
    if (wrong_at >= 0 && wrong_at < max_drafts) next[static_cast<size_t>(wrong_at)] ^= 1;
    out->insert(out->end(), next.begin(), next.end());
    return 1;  // class 0
  }
};

TEST(SchedulerTest, DroppedProposalsAreCheckedAgainstTheTokensThatFollow) {
  Harness h(64, 4, opts(64));
  OracleDrafter drafter;
  KeepSome selector;
  selector.keep = 0;  // nothing is verified: the record learns from shadows
  h.sched.set_drafter(&drafter);
  h.sched.set_draft_selector(&selector);
  ASSERT_TRUE(h.sched.add_request(make_spec(1, 4, 80)).is_ok());
  auto step = [&] {
    StepPlan p = h.sched.schedule(3);
    for (const ScheduledRequest& r : p.requests) EXPECT_EQ(r.num_draft_tokens, 0);
    h.sched.update(p, h.runner.run(p));
  };
  step();  // the prompt
  // Right proposals: a shadow of 3 matches over 3 steps, then the next.
  for (int i = 0; i < 9; ++i) step();
  const AcceptanceRecord right = h.sched.find(1)->draft_records.of[0];
  EXPECT_DOUBLE_EQ(right.rejected, 0.0);
  const double d = AcceptanceRecord::kDecay;
  // Three shadows resolved, at steps 3, 6 and 9 of the nine.
  EXPECT_NEAR(right.accepted, 3 * (d * d * d * d * d * d + d * d * d + 1.0), 1e-12);
  // The second proposal wrong: each shadow matches one token, then fails.
  drafter.wrong_at = 1;
  for (int i = 0; i < 40; ++i) step();
  const AcceptanceRecord half = h.sched.find(1)->draft_records.of[0];
  EXPECT_GT(half.rejected, 5.0);
  // As many matches as rejections since, besides the faded earlier ones.
  EXPECT_NEAR(half.accepted - right.accepted * std::pow(d, 40), half.rejected, 1e-9);
  // A request that then verifies drafts counts the shadow under way's
  // matches and stops shadowing.
  drafter.wrong_at = -1;
  selector.keep = 3;
  StepPlan p = h.sched.schedule(3);
  EXPECT_EQ(p.requests[0].num_draft_tokens, 3);
  EXPECT_TRUE(h.sched.find(1)->shadow_drafts.empty());
  h.sched.update(p, h.runner.run(p));
  for (int i = 0; i < 100 && h.sched.has_unfinished_requests(); ++i) {
    p = h.sched.schedule(3);
    h.sched.update(p, h.runner.run(p));
  }
  EXPECT_FALSE(h.sched.has_unfinished_requests());
}

}  // namespace
}  // namespace strata
