// `strata bench throughput`: offline serving throughput, like vLLM's
// `bench throughput` on its random dataset. Drives an EngineCore on this
// thread (no server): keeps up to --max-concurrency requests in flight,
// steps the engine and reads every stream after each step, so token times
// are step completion times. Reports requests/s, input/output/total tokens/s,
// TTFT and ITL percentiles, the aggregate decode rate over steps that ran
// decodes only, prefix-cache hits, preemptions and KV waste (allocated but
// unused slots of the scheduled requests, over all steps).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/parallel_flags.h"
#include "engine/engine_core.h"
#include "model/model_weights.h"
#include "tokenizer/tokenizer.h"

namespace strata::cli {
namespace {

using SteadyTime = std::chrono::steady_clock;

// CPU seconds of all this process's threads: output tokens per CPU second is
// a throughput figure that a busy shared machine does not distort much.
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double percentile(std::vector<double> xs, double q) {
  if (xs.empty()) return 0.0;
  std::sort(xs.begin(), xs.end());
  const size_t i = std::min(xs.size() - 1, static_cast<size_t>(q * (xs.size() - 1) + 0.5));
  return xs[i];
}

// The same LCG as `strata bench forward`: ids in [3, vocab).
class PromptIds {
 public:
  PromptIds(uint64_t seed, int64_t vocab) : state_(12345 + seed * 7919), vocab_(vocab) {}
  int32_t next() {
    state_ = (state_ * 1103515245ull + 12345ull) % 2147483648ull;
    return static_cast<int32_t>(3 + (state_ / 2147483648.0) * static_cast<double>(vocab_ - 3));
  }

 private:
  uint64_t state_;
  int64_t vocab_;
};

// The prompts of a --prompts file: one JSON string, or an object with a
// "prompt" string, per non-empty line.
Result<std::vector<std::string>> read_prompts(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error("--prompts: cannot open " + path);
  std::vector<std::string> prompts;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_string()) {
      prompts.push_back(j.get<std::string>());
    } else if (j.is_object() && j.contains("prompt") && j["prompt"].is_string()) {
      prompts.push_back(j["prompt"].get<std::string>());
    } else {
      return invalid_argument("--prompts: " + path + ":" + std::to_string(line_no) +
                              ": not a JSON string or {\"prompt\": string}");
    }
  }
  if (prompts.empty()) return invalid_argument("--prompts: " + path + " holds no prompt");
  return prompts;
}

struct Tracked {
  std::shared_ptr<RequestStream> stream;
  double arrival_s = 0.0;
  double first_token_s = -1.0;
  double last_token_s = -1.0;
  int64_t num_output_tokens = 0;
  bool is_done = false;
};

}  // namespace

int run_bench_throughput(const BenchThroughputOptions& opt) {
  const std::string path = opt.model_path.empty() ? default_model_path() : opt.model_path;
  Result<std::unique_ptr<ProcessGroup>> group = start_parallel(opt.parallel);
  if (!group) return fail(group.status());
  if (*group && !(*group)->layout().is_driver()) {
    return run_worker_rank(**group, path, opt.engine.options.num_threads);
  }
  Result<ModelWeights> weights = ModelWeights::open(path, group->get());
  if (!weights) return fail(weights.status());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_gguf(weights->file());
  if (!tokenizer) return fail(tokenizer.status());
  Result<EngineOptions> options = to_engine_options(opt.engine);
  if (!options) return fail(options.status());
  std::vector<std::vector<int32_t>> file_prompts;
  if (!opt.prompts_path.empty()) {
    Result<std::vector<std::string>> texts = read_prompts(opt.prompts_path);
    if (!texts) return fail(texts.status());
    for (const std::string& t : *texts)
      file_prompts.push_back((*tokenizer)->encode(t, true, false));
  }
  int64_t longest = int64_t{opt.prefix_len} +
                    static_cast<int64_t>(opt.input_len * (1.0 + opt.random_range_ratio)) +
                    opt.output_len;
  if (!file_prompts.empty()) {
    longest = 0;
    for (const auto& p : file_prompts) longest = std::max<int64_t>(longest, std::ssize(p));
    longest += opt.output_len;
  }
  if (options->max_model_len == 0 && longest > weights->config().context_length) {
    // Random ids: the trained context does not matter.
    options->max_model_len = longest;
    options->allow_long_max_model_len = true;
  }
  Result<std::unique_ptr<EngineCore>> core_or = EngineCore::create(*weights, **tokenizer, *options);
  if (!core_or) return fail(core_or.status());
  EngineCore& core = **core_or;

  // Prompts: a shared prefix, then unique ids.
  const int64_t vocab = weights->config().vocab_size;
  PromptIds ids(opt.seed, vocab);
  std::vector<int32_t> prefix(opt.prefix_len);
  for (int32_t& t : prefix) t = ids.next();
  std::vector<GenerationRequest> requests;
  int64_t num_input_tokens = 0;
  for (int32_t i = 0; i < opt.num_prompts; ++i) {
    GenerationRequest r;
    r.prompt_tokens = prefix;
    const double jitter =
        opt.random_range_ratio * (2.0 * (ids.next() - 3) / static_cast<double>(vocab - 3) - 1.0);
    const int32_t len = std::max(1, static_cast<int32_t>(opt.input_len * (1.0 + jitter) + 0.5));
    if (!file_prompts.empty()) {
      r.prompt_tokens = file_prompts[static_cast<size_t>(i) % file_prompts.size()];
    } else {
      for (int32_t k = 0; k < len; ++k) r.prompt_tokens.push_back(ids.next());
    }
    num_input_tokens += static_cast<int64_t>(r.prompt_tokens.size());
    r.max_tokens = opt.output_len;
    r.ignore_eos = true;
    r.sampling.temperature = 0.0f;
    requests.push_back(std::move(r));
  }

  const size_t max_in_flight =
      opt.max_concurrency > 0 ? static_cast<size_t>(opt.max_concurrency) : requests.size();
  std::vector<Tracked> tracked(requests.size());
  std::vector<double> itl_s;
  size_t next_request = 0;
  size_t num_in_flight = 0;
  size_t num_done = 0;
  double decode_only_s = 0.0;
  int64_t decode_only_tokens = 0;
  int64_t allocated_slots = 0;
  int64_t used_slots = 0;
  int64_t num_steps = 0;
  double step_s = 0.0;
  if (*group) (*group)->take_comm_seconds();  // start-up's exchanges are not the run's
  const SteadyTime::time_point t0 = SteadyTime::now();
  const double cpu0 = process_cpu_seconds();
  auto now_s = [&] { return std::chrono::duration<double>(SteadyTime::now() - t0).count(); };

  while (num_done < requests.size()) {
    while (num_in_flight < max_in_flight && next_request < requests.size()) {
      Tracked& t = tracked[next_request];
      Result<std::shared_ptr<RequestStream>> s = core.add_request(requests[next_request]);
      if (!s) return fail(s.status());
      t.stream = *s;
      t.arrival_s = now_s();
      ++next_request;
      ++num_in_flight;
    }
    const StepStats step = core.step();
    ++num_steps;
    step_s += step.seconds;
    allocated_slots += step.num_allocated_slots;
    used_slots += step.num_used_slots;
    if (step.num_prefill_tokens == 0 && step.num_sampled > 0) {
      decode_only_s += step.seconds;
      decode_only_tokens += step.num_sampled + step.num_accepted_drafts;
    }
    const double t = now_s();
    for (size_t i = 0; i < next_request; ++i) {
      Tracked& r = tracked[i];
      if (r.is_done) continue;
      for (const TokenEvent& e : r.stream->drain()) {
        if (!e.token_ids.empty()) {
          if (r.first_token_s < 0) {
            r.first_token_s = t;
          } else {
            itl_s.push_back(t - r.last_token_s);
          }
          r.last_token_s = t;
          r.num_output_tokens += static_cast<int64_t>(e.token_ids.size());
        }
        if (e.is_final) {
          if (e.finish_reason == FinishReason::kError) {
            return fail(internal_error("request failed: " + e.error_message));
          }
          r.is_done = true;
          ++num_done;
          --num_in_flight;
        }
      }
    }
  }
  const double elapsed_s = now_s();
  const double cpu_s = process_cpu_seconds() - cpu0;
  const double comm_s = *group ? (*group)->take_comm_seconds() : 0.0;

  int64_t num_output_tokens = 0;
  std::vector<double> ttft_s;
  for (const Tracked& r : tracked) {
    num_output_tokens += r.num_output_tokens;
    ttft_s.push_back(r.first_token_s - r.arrival_s);
  }
  const SchedulerStats sched = core.scheduler().stats();
  const double waste = allocated_slots > 0 ? 1.0 - static_cast<double>(used_slots) /
                                                       static_cast<double>(allocated_slots)
                                           : 0.0;
  const double decode_tok_s = decode_only_s > 0 ? decode_only_tokens / decode_only_s : 0.0;
  const double hit_rate = sched.prefix_query_tokens > 0
                              ? static_cast<double>(sched.prefix_hit_tokens) /
                                    static_cast<double>(sched.prefix_query_tokens)
                              : 0.0;
  const SpeculationGate* gate = core.speculation_gate();
  const GateStats spec = gate != nullptr ? gate->stats() : GateStats{};
  if (opt.json) {
    std::string ttft_list;
    for (size_t i = 0; i < ttft_s.size(); ++i) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%s%.4f", i ? "," : "", ttft_s[i]);
      ttft_list += buf;
    }
    std::printf(
        "{\"num_prompts\":%d,\"max_concurrency\":%zu,\"max_num_batched_tokens\":%lld,"
        "\"elapsed_s\":%.3f,\"requests_per_s\":%.4f,\"input_tok_s\":%.2f,\"output_tok_s\":%.2f,"
        "\"total_tok_s\":%.2f,\"decode_tok_s\":%.2f,\"ttft_median_s\":%.4f,\"ttft_p99_s\":%.4f,"
        "\"itl_median_s\":%.4f,\"itl_p99_s\":%.4f,\"prefix_hit_rate\":%.4f,\"preemptions\":%lld,"
        "\"kv_waste\":%.5f,\"kv_blocks\":%d,\"steps\":%lld,\"spec_draft_tokens\":%lld,"
        "\"spec_accepted_tokens\":%lld,\"spec_acceptance_rate\":%.4f,"
        "\"spec_tokens_per_step\":%.4f,\"spec_cost_ratio\":%.4f,\"spec_realised_gain\":%.4f,"
        "\"spec_vetoes\":%lld,\"cpu_s\":%.4f,"
        "\"output_tok_per_cpu_s\":%.2f,\"ttft_s\":[%s]}\n",
        opt.num_prompts, max_in_flight, static_cast<long long>(options->max_num_batched_tokens),
        elapsed_s, requests.size() / elapsed_s, num_input_tokens / elapsed_s,
        num_output_tokens / elapsed_s, (num_input_tokens + num_output_tokens) / elapsed_s,
        decode_tok_s, percentile(ttft_s, 0.5), percentile(ttft_s, 0.99), percentile(itl_s, 0.5),
        percentile(itl_s, 0.99), hit_rate, static_cast<long long>(sched.num_preemptions), waste,
        core.kv_cache().num_blocks(), static_cast<long long>(num_steps),
        static_cast<long long>(spec.num_draft_tokens),
        static_cast<long long>(spec.num_accepted_tokens), spec.acceptance_rate(),
        spec.tokens_per_step, spec.cost_ratio, spec.realised_gain,
        static_cast<long long>(spec.num_vetoes), cpu_s, num_output_tokens / std::max(cpu_s, 1e-9),
        ttft_list.c_str());
    return 0;
  }
  std::printf("requests          %d (max concurrency %zu, max-num-batched-tokens %lld)\n",
              opt.num_prompts, max_in_flight,
              static_cast<long long>(options->max_num_batched_tokens));
  std::printf("elapsed           %.2f s\n", elapsed_s);
  std::printf("throughput        %.3f requests/s\n", requests.size() / elapsed_s);
  std::printf("input tokens/s    %.1f (%lld tokens)\n", num_input_tokens / elapsed_s,
              static_cast<long long>(num_input_tokens));
  std::printf("output tokens/s   %.1f (%lld tokens)\n", num_output_tokens / elapsed_s,
              static_cast<long long>(num_output_tokens));
  std::printf("total tokens/s    %.1f\n", (num_input_tokens + num_output_tokens) / elapsed_s);
  std::printf("CPU time          %.2f s (%.1f output tokens per CPU second)\n", cpu_s,
              num_output_tokens / std::max(cpu_s, 1e-9));
  std::printf("decode tokens/s   %.1f (steps with decodes only)\n", decode_tok_s);
  std::printf("TTFT              median %.3f s, p99 %.3f s\n", percentile(ttft_s, 0.5),
              percentile(ttft_s, 0.99));
  std::printf("ITL               median %.4f s, p99 %.4f s\n", percentile(itl_s, 0.5),
              percentile(itl_s, 0.99));
  if (*group) {
    // Rank 0's time inside exchanges: transfers plus waiting for the
    // slowest peer.
    std::printf("communication     %.1f%% of step time on rank 0 (%.3f of %.3f ms per step)\n",
                step_s > 0 ? 100.0 * comm_s / step_s : 0.0,
                1e3 * comm_s / static_cast<double>(std::max<int64_t>(1, num_steps)),
                1e3 * step_s / static_cast<double>(std::max<int64_t>(1, num_steps)));
    if (core.pipeline_depth() > 1) {
      std::printf(
          "pipeline          %d micro-batches in flight; %lld of %lld steps launched while "
          "another was in flight\n",
          core.pipeline_depth(), static_cast<long long>(core.num_overlapped_launches()),
          static_cast<long long>(num_steps));
    }
  }
  std::printf("prefix cache      %.1f%% of prompt tokens hit\n", 100.0 * hit_rate);
  std::printf("preemptions       %lld\n", static_cast<long long>(sched.num_preemptions));
  std::printf("KV waste          %.2f%% of allocated slots unused (%d blocks of %d)\n",
              100.0 * waste, core.kv_cache().num_blocks(), core.kv_cache().block_size());
  if (gate != nullptr) {
    std::printf(
        "speculative       %s: %lld of %lld drafts accepted (%.1f%%), %.2f tokens per "
        "request-step, drafting step cost %.2fx a plain one (%lld drafting steps, %lld "
        "plain), measured gain %.2fx (%lld times stopped)\n",
        options->speculative.to_json().c_str(), static_cast<long long>(spec.num_accepted_tokens),
        static_cast<long long>(spec.num_draft_tokens), 100.0 * spec.acceptance_rate(),
        spec.tokens_per_step, spec.cost_ratio, static_cast<long long>(spec.num_draft_steps),
        static_cast<long long>(spec.num_plain_steps), spec.realised_gain,
        static_cast<long long>(spec.num_vetoes));
  }
  return 0;
}

}  // namespace strata::cli
