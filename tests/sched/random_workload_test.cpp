// Property test: random arrivals, aborts, priorities, prompt families that
// share prefixes, salts and lengths, on a pool small enough to force
// preemption. After every step the KV invariants hold; at the end nothing
// leaks and every request's output is the one it would get alone.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "harness.h"

namespace strata {
namespace {

using testing::Harness;
using testing::reference_output;

struct WorkloadConfig {
  uint64_t seed;
  SchedulingPolicy policy;
  int64_t max_batched;
  int32_t max_seqs;
  int32_t num_blocks;
  int32_t block_size;
};

struct WorkloadResult {
  int64_t num_preemptions = 0;
  int64_t prefix_hit_tokens = 0;
  int num_finished = 0;
};

void run_workload(const WorkloadConfig& cfg, WorkloadResult* result) {
  WorkloadResult& res = *result;
  SchedulerOptions o;
  o.policy = cfg.policy;
  o.max_num_batched_tokens = cfg.max_batched;
  o.max_num_seqs = cfg.max_seqs;
  o.max_model_len = 256;
  // Some runs cap prompt tokens while others decode, some weighting each
  // by its context.
  o.max_prefill_tokens = cfg.seed % 3 == 0 ? 0 : 6;
  o.prefill_cost_context_len = cfg.seed % 2 == 0 ? 0 : 40;
  Harness h(cfg.num_blocks, cfg.block_size, o);
  std::mt19937_64 rng(cfg.seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // Three prompt families: requests of a family share a prefix.
  std::vector<std::vector<int32_t>> families;
  for (int f = 0; f < 3; ++f) families.push_back(testing::prompt_of(40, 10 + 50 * f));

  std::map<RequestId, RequestSpec> specs;
  std::map<RequestId, bool> aborted;
  RequestId next_id = 1;
  constexpr int kArrivalSteps = 150;
  int step = 0;
  for (; step < kArrivalSteps || h.sched.has_unfinished_requests(); ++step) {
    if (step > kArrivalSteps + 3000) {
      ADD_FAILURE() << "no progress: seed " << cfg.seed;
      break;
    }
    if (step < kArrivalSteps) {
      for (int a = uniform(0, 2); a > 0; --a) {
        RequestSpec s;
        s.id = next_id++;
        const int len = uniform(1, 40);
        if (uniform(0, 1)) {
          const auto& fam = families[uniform(0, 2)];
          s.prompt_tokens.assign(fam.begin(), fam.begin() + len);
        } else {
          for (int i = 0; i < len; ++i) s.prompt_tokens.push_back(uniform(0, 999));
        }
        s.max_tokens = uniform(1, 24);
        s.min_tokens = uniform(0, 2) == 0 ? uniform(0, s.max_tokens) : 0;
        s.priority = uniform(0, 3);
        s.cache_salt = uniform(0, 3) == 0 ? "tenant" : "";
        if (uniform(0, 3) == 0) s.stop_token_ids = {testing::kFirstOutputToken + uniform(0, 999)};
        Status st = h.sched.add_request(s);
        if (st.is_ok()) {
          specs[s.id] = s;
        } else {
          // Only a request too large for the whole pool may be refused.
          EXPECT_EQ(st.code(), StatusCode::kResourceExhausted) << st.message();
        }
      }
      if (uniform(0, 9) == 0 && !specs.empty()) {
        const RequestId victim = std::next(specs.begin(), uniform(0, int(specs.size()) - 1))->first;
        if (h.sched.finish_request(victim, FinishReason::kAbort)) aborted[victim] = true;
      }
    }
    h.step();
    h.check_invariants();
    if (::testing::Test::HasFatalFailure()) return;
  }
  // No leak, no request left behind.
  EXPECT_EQ(h.kv.num_free_blocks(), cfg.num_blocks);
  EXPECT_TRUE(h.kv.seq_ids().empty());
  EXPECT_EQ(h.sched.num_running() + h.sched.num_waiting(), 0);
  h.check_all_finishes_reported();
  // Batch invariance: each stream is a prefix of the request's solo output,
  // and a finished request's stream is complete and ends for the right reason.
  for (const auto& [id, s] : specs) {
    const auto& out = h.outputs[id];
    EXPECT_EQ(out, reference_output(s.prompt_tokens, out.size())) << "request " << id;
    if (aborted.count(id)) continue;
    ASSERT_TRUE(h.finished.count(id)) << id;
    ++res.num_finished;
    const FinishReason reason = h.finished[id];
    if (reason == FinishReason::kLength) {
      EXPECT_EQ(static_cast<int>(out.size()), s.max_tokens) << id;
    } else {
      ASSERT_EQ(reason, FinishReason::kStop) << id;
      ASSERT_FALSE(s.stop_token_ids.empty()) << id;
      EXPECT_EQ(out.back(), s.stop_token_ids[0]);
      EXPECT_GT(static_cast<int>(out.size()), s.min_tokens);
    }
  }
  const SchedulerStats stats = h.sched.stats();
  res.num_preemptions = stats.num_preemptions;
  res.prefix_hit_tokens = stats.prefix_hit_tokens;
}

TEST(RandomWorkloadTest, InvariantsHoldAfterEveryStep) {
  int64_t total_preemptions = 0;
  int64_t total_hits = 0;
  int total_finished = 0;
  uint64_t seed = 1;
  for (SchedulingPolicy policy : {SchedulingPolicy::kFcfs, SchedulingPolicy::kPriority}) {
    for (int64_t max_batched : {7, 32, 512}) {
      for (int32_t block_size : {1, 4, 16}) {
        WorkloadConfig cfg{seed++, policy, max_batched, 256, 64 / block_size + 8, block_size};
        SCOPED_TRACE(::testing::Message()
                     << "seed " << cfg.seed << " policy " << scheduling_policy_name(policy)
                     << " budget " << max_batched << " block " << block_size);
        WorkloadResult r;
        run_workload(cfg, &r);
        if (::testing::Test::HasFatalFailure()) return;
        total_preemptions += r.num_preemptions;
        total_hits += r.prefix_hit_tokens;
        total_finished += r.num_finished;
      }
    }
  }
  RecordProperty("preemptions", static_cast<int>(total_preemptions));
  RecordProperty("prefix_hit_tokens", static_cast<int>(total_hits));
  RecordProperty("finished", total_finished);
  // The workload must actually exercise preemption and the prefix cache.
  EXPECT_GT(total_preemptions, 0);
  EXPECT_GT(total_hits, 0);
  EXPECT_GT(total_finished, 100);
}

}  // namespace
}  // namespace strata
