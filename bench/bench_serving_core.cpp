// bench_serving_core: the serving core's performance scenarios (issue 3) on a
// real-shaped model, driving an EngineCore on this thread and timing each
// step. Prints one table per scenario; medians throughout (the host is noisy).
//
//   bench_serving_core MODEL [SCENARIO...] [--threads N] [--budgets 16,64,...]
//                      [--attention-cost X]   (EngineOptions::prefill_attention_cost)
//   scenarios: waste decode prefix chunked (default: all)
//
//   waste    random prompt/output lengths: allocated-but-unused KV slots over
//            allocated slots, summed over steps (target < 4%).
//   decode   C = 1, 2, 4, 8, 16, 32 streams decoding together: aggregate
//            tokens/s = C / median decode step time.
//   prefix   1000 shared + 64 unique prompt tokens: TTFT cold vs on a hit
//            (target: hit <= cold / 8).
//   chunked  8 decoding streams, then a 4000-token prompt arrives, for each
//            --max-num-batched-tokens: the streams' p99 inter-token latency
//            while it prefills vs idle, and its TTFT vs alone (targets:
//            p99 ITL <= 3x idle, TTFT <= 1.5x solo).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "model/model_weights.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

using Time = std::chrono::steady_clock;

double median(std::vector<double> xs) {
  if (xs.empty()) return 0.0;
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}
double p99(std::vector<double> xs) {
  if (xs.empty()) return 0.0;
  std::sort(xs.begin(), xs.end());
  return xs[std::min(xs.size() - 1, static_cast<size_t>(0.99 * (xs.size() - 1) + 0.5))];
}

struct Setup {
  const ModelWeights* weights;
  const Tokenizer* tokenizer;
  int32_t num_threads = 2;
  double attention_cost = EngineOptions{}.prefill_attention_cost;  // --attention-cost
};

class Ids {
 public:
  explicit Ids(uint64_t seed, int64_t vocab) : state_(seed * 2654435761ull + 1), vocab_(vocab) {}
  int32_t next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<int32_t>(3 + (state_ >> 33) % static_cast<uint64_t>(vocab_ - 3));
  }
  std::vector<int32_t> take(int n) {
    std::vector<int32_t> v(n);
    for (int32_t& t : v) t = next();
    return v;
  }

 private:
  uint64_t state_;
  int64_t vocab_;
};

GenerationRequest request(std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerationRequest r;
  r.prompt_tokens = std::move(prompt);
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  r.sampling.temperature = 0.0f;
  return r;
}

// One EngineCore plus per-request token times (seconds since start).
class Driver {
 public:
  Driver(const Setup& s, int64_t budget, int64_t max_model_len, size_t kv_bytes) {
    EngineOptions o;
    // `budget` is the chunked-prefill knob: prompt tokens per step while
    // others decode. The step cap stays at least the default.
    o.max_prefill_tokens = budget;
    o.max_num_batched_tokens = std::max(o.max_num_batched_tokens, budget);
    o.max_model_len = max_model_len;
    // The 4,000-token prompts pass the bench model's trained 2,048 (random
    // weights: only the timing matters here).
    o.allow_long_max_model_len = true;
    o.kv_cache_memory_bytes = kv_bytes;
    o.num_threads = s.num_threads;
    o.prefill_attention_cost = s.attention_cost;
    Result<std::unique_ptr<EngineCore>> core = EngineCore::create(*s.weights, *s.tokenizer, o);
    if (!core) {
      std::fprintf(stderr, "error: %s\n", core.status().message().c_str());
      std::exit(1);
    }
    core_ = std::move(*core);
    t0_ = Time::now();
  }

  double now() const { return std::chrono::duration<double>(Time::now() - t0_).count(); }

  size_t add(GenerationRequest r) {
    Result<std::shared_ptr<RequestStream>> s = core_->add_request(std::move(r));
    if (!s) {
      std::fprintf(stderr, "error: %s\n", s.status().message().c_str());
      std::exit(1);
    }
    streams_.push_back(*s);
    arrival_.push_back(now());
    token_times_.emplace_back();
    done_.push_back(false);
    return streams_.size() - 1;
  }

  StepStats step() {
    StepStats st = core_->step();
    const double t = now();
    for (size_t i = 0; i < streams_.size(); ++i) {
      for (const TokenEvent& e : streams_[i]->drain()) {
        for (size_t k = 0; k < e.token_ids.size(); ++k) token_times_[i].push_back(t);
        if (e.is_final) done_[i] = true;
      }
    }
    return st;
  }

  void abort_all() { core_->abort_all(); }
  bool busy() const { return core_->has_unfinished_requests(); }
  bool is_done(size_t i) const { return done_[i]; }
  double ttft(size_t i) const {
    return token_times_[i].empty() ? -1.0 : token_times_[i][0] - arrival_[i];
  }
  const std::vector<double>& token_times(size_t i) const { return token_times_[i]; }

 private:
  std::unique_ptr<EngineCore> core_;
  Time::time_point t0_;
  std::vector<std::shared_ptr<RequestStream>> streams_;
  std::vector<double> arrival_;
  std::vector<std::vector<double>> token_times_;
  std::vector<bool> done_;
};

constexpr size_t kGiB = size_t{1} << 30;

void scenario_waste(const Setup& s) {
  std::printf("\n== KV waste (random lengths: prompts 32..480, outputs 8..64, 12 requests) ==\n");
  Driver d(s, 128, 4200, kGiB);
  Ids ids(1, s.weights->config().vocab_size);
  for (int i = 0; i < 12; ++i) {
    const int in = 32 + static_cast<int>(ids.next() % 449);
    const int out = 8 + static_cast<int>(ids.next() % 57);
    d.add(request(ids.take(in), out));
  }
  int64_t allocated = 0, used = 0;
  while (d.busy()) {
    const StepStats st = d.step();
    allocated += st.num_allocated_slots;
    used += st.num_used_slots;
  }
  std::printf("allocated slot-steps %lld, used %lld, waste %.2f%% (target < 4%%)\n",
              static_cast<long long>(allocated), static_cast<long long>(used),
              100.0 * (1.0 - static_cast<double>(used) / static_cast<double>(allocated)));
}

void scenario_decode(const Setup& s) {
  std::printf("\n== Batched decode (prompt 16, 24 decode steps; C / median step time) ==\n");
  std::printf("%6s %14s %14s\n", "C", "step ms", "tokens/s");
  for (int c : {1, 2, 4, 8, 16, 32}) {
    Driver d(s, 2048, 4200, kGiB);
    Ids ids(100 + c, s.weights->config().vocab_size);
    for (int i = 0; i < c; ++i) d.add(request(ids.take(16), 26));
    std::vector<double> decode_steps;
    while (d.busy()) {
      const StepStats st = d.step();
      if (st.num_prefill_tokens == 0 && st.num_sampled == c) decode_steps.push_back(st.seconds);
    }
    const double step_s = median(decode_steps);
    std::printf("%6d %14.1f %14.2f\n", c, 1e3 * step_s, c / step_s);
    std::fflush(stdout);
  }
}

void scenario_prefix(const Setup& s) {
  std::printf("\n== Shared prefix (1000 shared + 64 unique tokens, 1 output token) ==\n");
  Driver d(s, 2048, 4200, kGiB);
  Ids ids(7, s.weights->config().vocab_size);
  const std::vector<int32_t> shared = ids.take(1000);
  std::vector<double> ttft;
  for (int i = 0; i < 4; ++i) {
    std::vector<int32_t> prompt = shared;
    const std::vector<int32_t> unique = ids.take(64);
    prompt.insert(prompt.end(), unique.begin(), unique.end());
    const size_t r = d.add(request(prompt, 1));
    while (!d.is_done(r)) d.step();
    ttft.push_back(d.ttft(r));
  }
  const double cold = ttft[0];
  const double hit = median(std::vector<double>(ttft.begin() + 1, ttft.end()));
  std::printf(
      "TTFT cold %.3f s, on a hit %.3f s (median of 3): hit/cold = 1/%.1f (target >= 1/8)\n", cold,
      hit, cold / hit);
}

void scenario_chunked(const Setup& s, const std::vector<int64_t>& budgets) {
  constexpr int kStreams = 8;
  constexpr int kLongPrompt = 4000;
  std::printf("\n== Chunked prefill (8 decoding streams + a %d-token prompt) ==\n", kLongPrompt);
  const int64_t vocab = s.weights->config().vocab_size;
  // Idle ITL: the 8 streams alone.
  double idle_itl = 0.0;
  {
    Driver d(s, 2048, 4200, kGiB);
    Ids ids(11, vocab);
    for (int i = 0; i < kStreams; ++i) d.add(request(ids.take(16), 40));
    std::vector<double> itl;
    while (d.busy()) d.step();
    for (int i = 0; i < kStreams; ++i) {
      const auto& t = d.token_times(i);
      for (size_t k = 2; k < t.size(); ++k) itl.push_back(t[k] - t[k - 1]);
    }
    idle_itl = median(itl);
  }
  // Solo TTFT of the long prompt, at the largest budget (its fastest).
  double solo_ttft = 0.0;
  {
    Driver d(s, 2048, 4200, kGiB);
    Ids ids(12, vocab);
    const size_t r = d.add(request(ids.take(kLongPrompt), 1));
    while (!d.is_done(r)) d.step();
    solo_ttft = d.ttft(r);
  }
  std::printf("idle ITL (median, separate run) %.1f ms; solo TTFT %.2f s (budget 2048)\n",
              1e3 * idle_itl, solo_ttft);
  std::fflush(stdout);
  std::printf("%8s %10s %12s %12s %10s %10s %10s %6s\n", "budget", "idle ms", "p50 ITL ms",
              "p99 ITL ms", "p99/idle", "TTFT s", "TTFT/solo", "ok");
  for (int64_t budget : budgets) {
    Driver d(s, budget, 4200, kGiB);
    Ids ids(11, vocab);
    for (int i = 0; i < kStreams; ++i) d.add(request(ids.take(16), 4000));
    // Steady decoding first; its ITL in this same run is the idle reference
    // for the ratio (the shared host's load drifts between runs).
    while (d.token_times(kStreams - 1).size() < 12) d.step();
    std::vector<double> idle;
    for (int i = 0; i < kStreams; ++i) {
      const auto& t = d.token_times(i);
      for (size_t k = 2; k < t.size(); ++k) idle.push_back(t[k] - t[k - 1]);
    }
    const double run_idle_itl = median(idle);
    Ids long_ids(12, vocab);
    const size_t r = d.add(request(long_ids.take(kLongPrompt), 1));
    const double t_arrival = d.now();
    while (!d.is_done(r)) d.step();
    std::vector<double> itl;
    for (int i = 0; i < kStreams; ++i) {
      const auto& t = d.token_times(i);
      for (size_t k = 1; k < t.size(); ++k) {
        if (t[k - 1] >= t_arrival) itl.push_back(t[k] - t[k - 1]);
      }
    }
    d.abort_all();
    const double ttft = d.ttft(r);
    const bool ok = p99(itl) <= 3.0 * run_idle_itl && ttft <= 1.5 * solo_ttft;
    std::printf("%8lld %10.1f %12.1f %12.1f %10.2f %10.2f %10.2f %6s\n",
                static_cast<long long>(budget), 1e3 * run_idle_itl, 1e3 * median(itl),
                1e3 * p99(itl), p99(itl) / run_idle_itl, ttft, ttft / solo_ttft, ok ? "yes" : "no");
    std::fflush(stdout);
  }
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  using namespace strata;
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_serving_core MODEL [waste|decode|prefix|chunked ...] "
                 "[--threads N] [--budgets 16,32,...] [--attention-cost X]\n");
    return 2;
  }
  std::set<std::string> scenarios;
  Setup setup;
  std::vector<int64_t> budgets = {16, 32, 64, 128, 256, 512, 1024, 2048};
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      setup.num_threads = std::atoi(argv[++i]);
    } else if (a == "--attention-cost" && i + 1 < argc) {
      setup.attention_cost = std::atof(argv[++i]);
    } else if (a == "--budgets" && i + 1 < argc) {
      budgets.clear();
      std::string list = argv[++i];
      size_t pos = 0;
      while (pos < list.size()) {
        size_t end = list.find(',', pos);
        if (end == std::string::npos) end = list.size();
        budgets.push_back(std::atoll(list.substr(pos, end - pos).c_str()));
        pos = end + 1;
      }
    } else {
      scenarios.insert(a);
    }
  }
  if (scenarios.empty()) scenarios = {"waste", "decode", "prefix", "chunked"};
  Result<ModelWeights> weights = ModelWeights::open(argv[1]);
  if (!weights) {
    std::fprintf(stderr, "error: %s\n", weights.status().message().c_str());
    return 1;
  }
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_gguf(weights->file());
  if (!tokenizer) {
    std::fprintf(stderr, "error: %s\n", tokenizer.status().message().c_str());
    return 1;
  }
  setup.weights = &*weights;
  setup.tokenizer = tokenizer->get();
  std::printf("model %s, %d threads, prefill attention cost %.2f\n", argv[1], setup.num_threads,
              setup.attention_cost);
  if (scenarios.count("waste")) scenario_waste(setup);
  if (scenarios.count("decode")) scenario_decode(setup);
  if (scenarios.count("prefix")) scenario_prefix(setup);
  if (scenarios.count("chunked")) scenario_chunked(setup, budgets);
  return 0;
}
