// Harness: a Scheduler wired to a KvCacheManager, a FakeClock and a
// FakeRunner, recording every streamed token and finish, plus the KV
// invariant checks the property test runs after every step.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "fake_runner.h"
#include "kv/kv_cache_manager.h"
#include "sched/clock.h"
#include "sched/scheduler.h"

namespace strata::testing {

inline KvCacheOptions kv_options(int32_t num_blocks, int32_t block_size) {
  KvCacheOptions o;
  o.enable_prefix_caching = true;
  o.num_blocks = num_blocks;
  o.block_size = block_size;
  return o;
}

inline std::vector<int32_t> prompt_of(int n, int32_t start) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), start);
  return t;
}

inline RequestSpec make_spec(RequestId id, int prompt_len, int max_tokens, int priority = 0,
                             int32_t first_token = -1) {
  RequestSpec s;
  s.id = id;
  s.prompt_tokens =
      prompt_of(prompt_len, first_token >= 0 ? first_token : static_cast<int32_t>(id) * 100);
  s.max_tokens = max_tokens;
  s.priority = priority;
  return s;
}

struct Harness {
  Harness(int32_t num_blocks, int32_t block_size, const SchedulerOptions& options)
      : kv(kv_options(num_blocks, block_size)),
        runner(num_blocks, block_size),
        sched(options, &kv, &clock) {
    EXPECT_TRUE(options.validate().is_ok());
  }

  // One engine step; returns the plan it ran.
  StepPlan step() {
    StepPlan plan = sched.schedule();
    check_plan(plan);
    last_output = sched.update(plan, runner.run(plan));
    for (const RequestUpdate& u : last_output.updates) {
      if (u.has_new_token) outputs[u.request_id].push_back(u.new_token);
      if (u.finish_reason != FinishReason::kNone) {
        finished[u.request_id] = u.finish_reason;
        finish_order.push_back(u.request_id);
      }
    }
    clock.advance_ns(1000);
    return plan;
  }

  // The plan is self-contained: a request's NewRequestData comes exactly in
  // its first plan, and every request that was in a plan is reported in
  // finished_ids exactly once, after it left.
  void check_plan(const StepPlan& plan) {
    for (RequestId id : plan.finished_ids) {
      EXPECT_TRUE(introduced.count(id)) << "finished before any plan: " << id;
      EXPECT_TRUE(reported_finished.insert(id).second) << "finished twice: " << id;
      EXPECT_EQ(sched.find(id), nullptr) << id;
    }
    for (const ScheduledRequest& r : plan.requests) {
      const bool is_new = introduced.insert(r.request_id).second;
      EXPECT_EQ(r.new_request.has_value(), is_new) << r.request_id;
      EXPECT_FALSE(reported_finished.count(r.request_id)) << r.request_id;
      const Request* req = sched.find(r.request_id);
      ASSERT_NE(req, nullptr);
      if (r.new_request) {
        EXPECT_EQ(r.new_request->stop_token_ids, req->spec.stop_token_ids);
        EXPECT_TRUE(std::equal(r.new_request->prompt_tokens.begin(),
                               r.new_request->prompt_tokens.end(), req->prompt_tokens().begin(),
                               req->prompt_tokens().end()));
      }
      EXPECT_EQ(r.masks_stop_tokens,
                r.is_sampling && req->num_output_tokens() < req->spec.min_tokens);
    }
  }
  // After the last request finished: one more plan reports the rest.
  void check_all_finishes_reported() {
    check_plan(sched.schedule());
    EXPECT_EQ(introduced.size(), reported_finished.size());
  }

  // Steps until nothing is left (at most max_steps); returns steps taken.
  int run_to_completion(int max_steps = 10000) {
    int n = 0;
    while (sched.has_unfinished_requests() && n < max_steps) {
      step();
      ++n;
    }
    return n;
  }

  // KV invariants: free xor referenced; refcount == holders; each cached
  // block holds exactly the tokens it is cached for; running requests'
  // tables cover their computed tokens.
  void check_invariants() const {
    const BlockPool& pool = kv.pool();
    std::vector<int32_t> holders(pool.num_blocks(), 0);
    for (uint64_t id : kv.seq_ids()) {
      const Request* r = sched.find(id);
      ASSERT_NE(r, nullptr) << "blocks held by a dead request " << id;
      ASSERT_EQ(r->status, RequestStatus::kRunning) << id;
      const auto& table = kv.block_table(id);
      ASSERT_GE(static_cast<int64_t>(table.size()) * pool.block_size(), r->num_computed_tokens);
      for (int32_t b : table) ++holders[b];
    }
    for (int32_t b = 0; b < pool.num_blocks(); ++b) {
      ASSERT_EQ(pool.ref_count(b), holders[b]) << "block " << b;
      ASSERT_NE(pool.is_free(b), pool.ref_count(b) > 0) << "block " << b;
    }
    for (const auto& [hash, b] : pool.cached_entries()) {
      ASSERT_EQ(pool.hash_of(b), hash);
      std::span<const int32_t> toks = pool.tokens_of(b);
      for (int32_t i = 0; i < pool.block_size(); ++i) {
        ASSERT_EQ(runner.token_in_slot(static_cast<int64_t>(b) * pool.block_size() + i), toks[i])
            << "cached block " << b << " offset " << i;
      }
    }
    ASSERT_EQ(pool.num_free_blocks() +
                  static_cast<int32_t>(std::count_if(holders.begin(), holders.end(),
                                                     [](int32_t h) { return h > 0; })),
              pool.num_blocks());
  }

  FakeClock clock;
  KvCacheManager kv;
  FakeRunner runner;
  Scheduler sched;
  StepOutput last_output;
  std::map<RequestId, std::vector<int32_t>> outputs;
  std::map<RequestId, FinishReason> finished;
  std::vector<RequestId> finish_order;
  std::set<RequestId> introduced;         // seen in a plan
  std::set<RequestId> reported_finished;  // seen in a plan's finished_ids
};

}  // namespace strata::testing
