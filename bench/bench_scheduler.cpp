// Scheduler overhead: one engine step's schedule() + update() with N running
// requests in steady-state decode (the runner is a fake that returns a
// token per sampling request and is not timed). Requests have a 128-token
// prompt and 256..511 output tokens; each one that finishes is replaced at
// once (untimed), so the batch stays at N and the work includes admissions,
// prefix-cache lookups, block growth, hashing of newly full blocks and
// finishes at their natural rate.
//
// Compare time/iteration against a decode step of the same batch on the
// target model: the budget is < 1% of it.
//
// Run: build-*/bench_scheduler [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "sched/clock.h"
#include "sched/scheduler.h"

namespace strata {
namespace {

constexpr int kBlockSize = 16;
constexpr int kPromptTokens = 128;

RequestSpec make_request(RequestId id, int shared_prefix_tokens) {
  RequestSpec s;
  s.id = id;
  s.prompt_tokens.resize(kPromptTokens);
  for (int i = 0; i < kPromptTokens; ++i) {
    s.prompt_tokens[i] =
        i < shared_prefix_tokens ? 7 + i : static_cast<int32_t>(id * 131 + i) % 32000;
  }
  s.max_tokens = 256 + static_cast<int32_t>((id * 97) % 256);
  s.stop_token_ids = {2};
  return s;
}

StepResult fake_run(const StepPlan& plan) {
  StepResult r;
  r.sampled.reserve(plan.requests.size());
  for (const ScheduledRequest& s : plan.requests) {
    if (s.is_sampling) {
      const int32_t pos = s.position(s.num_new_tokens - 1);
      r.sampled.push_back(
          {s.request_id, 3 + static_cast<int32_t>((s.request_id * 7 + pos) % 31000)});
    }
  }
  return r;
}

void BM_ScheduleUpdate(benchmark::State& state) {
  const int num_running = static_cast<int>(state.range(0));
  const int shared_prefix_tokens = static_cast<int>(state.range(1));
  KvCacheOptions kv_options;
  kv_options.enable_prefix_caching = true;
  kv_options.block_size = kBlockSize;
  kv_options.num_blocks = num_running * ((kPromptTokens + 512) / kBlockSize + 1) + 64;
  KvCacheManager kv(kv_options);
  SchedulerOptions options;
  options.max_num_seqs = num_running;
  options.max_num_batched_tokens = 2048;
  options.max_model_len = 4096;
  FakeClock clock;
  Scheduler sched(options, &kv, &clock);
  RequestId next_id = 1;
  for (int i = 0; i < num_running; ++i) {
    if (!sched.add_request(make_request(next_id++, shared_prefix_tokens)).is_ok()) {
      state.SkipWithError("add_request failed");
      return;
    }
  }
  // Untimed warm-up: finish every prefill.
  for (int i = 0; i < 64 && sched.num_waiting() > 0; ++i) {
    StepPlan plan = sched.schedule();
    (void)sched.update(plan, fake_run(plan));
  }

  int64_t num_steps = 0;
  int64_t num_tokens = 0;
  for (auto _ : state) {
    StepPlan plan = sched.schedule();
    state.PauseTiming();
    StepResult result = fake_run(plan);
    state.ResumeTiming();
    StepOutput out = sched.update(plan, result);
    benchmark::DoNotOptimize(out);
    state.PauseTiming();
    num_tokens += plan.num_scheduled_tokens;
    ++num_steps;
    for (const RequestUpdate& u : out.updates) {
      if (u.finish_reason != FinishReason::kNone) {
        (void)sched.add_request(make_request(next_id++, shared_prefix_tokens));
      }
    }
    clock.advance_ns(1'000'000);
    state.ResumeTiming();
  }
  state.counters["running"] = sched.num_running();
  state.counters["tokens_per_step"] =
      num_steps ? static_cast<double>(num_tokens) / static_cast<double>(num_steps) : 0.0;
  state.counters["kv_usage"] = kv.usage();
}

BENCHMARK(BM_ScheduleUpdate)
    ->ArgNames({"running", "shared_prefix"})
    ->Args({256, 0})
    ->Args({256, 112})
    ->Args({32, 0})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace strata

BENCHMARK_MAIN();
