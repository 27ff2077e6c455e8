// Benchmark runner: sends a dataset to an OpenAI-compatible server under an
// arrival schedule and a concurrency cap, and returns every request's
// outcome plus the aggregate metrics.
//
// Threads: a dispatcher (the caller's thread) releases request i at
// arrival_times[i]; W worker threads, each with its own keep-alive
// connection, take released requests in order and stream them
// (W = max_concurrency, or one per request when uncapped), so a request
// that arrives while W are in flight waits, and its latencies count from
// when it is actually sent (vLLM's semaphore semantics).
// Multi-turn: the unit released and capped is a session; a worker sends its
// turns one after another, each carrying the full history with the
// assistant's actual replies. A failed turn ends its session; its later
// turns count as failed ("not sent").
// Warm-up requests (the first request / the first turn) are sent one after
// another before the clock starts; a failed warm-up is an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loadgen/benchmark_metrics.h"
#include "loadgen/dataset.h"
#include "loadgen/multi_turn.h"
#include "loadgen/openai_client.h"
#include "loadgen/request_body.h"
#include "util/status.h"

namespace strata::loadgen {

struct RunOptions {
  std::string endpoint = "/v1/completions";
  BodyOptions body;
  double request_rate = 0.0;  // <= 0 or inf = all at once
  double burstiness = 1.0;
  int32_t max_concurrency = 0;  // 0 = no cap
  uint64_t seed = 0;            // arrival schedule
  int32_t num_warmups = 1;
  SloOptions slo;
  std::vector<double> percentiles = {50.0, 90.0, 99.0};
  bool show_progress = false;
  bool keep_text = false;  // keep generated text in outcomes (multi-turn always does)
};

struct RunResult {
  std::vector<RequestOutcome> outcomes;  // in dataset order (session-major for multi-turn)
  double duration_s = 0.0;               // first send -> last response end
  BenchmarkMetrics metrics;
};

Result<RunResult> run_benchmark(const ClientOptions& client, const RunOptions& opt,
                                const std::vector<BenchRequest>& requests);
Result<RunResult> run_multi_turn_benchmark(const ClientOptions& client, const RunOptions& opt,
                                           const std::vector<ChatSession>& sessions);

}  // namespace strata::loadgen
