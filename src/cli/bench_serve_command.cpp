// `strata bench serve`: a load generator for any OpenAI-compatible server
// (strata serve, llama-server, vLLM, ...), like vLLM's `bench serve`. The
// work lives in src/loadgen; this file registers the flags, resolves the
// model and vocabulary, builds the dataset, runs one benchmark per
// concurrency (--sweep-concurrency) and writes the report, the JSON result
// and the SVG plot. docs/bench_serve.md defines every dataset and metric.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "loadgen/benchmark_runner.h"
#include "loadgen/report_table.h"
#include "loadgen/result_json.h"
#include "loadgen/svg_plot.h"

namespace strata::cli {
namespace {

using nlohmann::json;
namespace lg = strata::loadgen;

Result<double> parse_rate(const std::string& s) {
  if (s == "inf" || s == "Inf" || s == "INF") return std::numeric_limits<double>::infinity();
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !(v > 0.0)) throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    return invalid_argument("--request-rate '" + s + "': expected a positive number or inf");
  }
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return buf;
}

Result<int32_t> resolve_vocab_size(const BenchServeOptions& opt, const json& models,
                                   lg::OpenAiClient* client, const std::string& model) {
  if (opt.vocab_size > 0) return opt.vocab_size;
  if (int32_t n = lg::advertised_vocab_size(models)) return n;
  std::fprintf(stderr,
               "bench serve: probing the server's vocabulary size (set --vocab-size to skip)\n");
  return lg::probe_vocab_size(client, model);
}

}  // namespace

CLI::App* add_bench_serve_command(CLI::App* bench, BenchServeOptions* o) {
  auto* c = bench->add_subcommand(
      "serve", "Load-test an OpenAI-compatible server: TTFT, TPOT, ITL, throughput, goodput");
  c->add_option("--base-url", o->base_url,
                "Server to load (default: `strata serve`'s http://127.0.0.1:8000)")
      ->capture_default_str();
  c->add_option("--endpoint", o->endpoint,
                "Path of the API (default /v1/completions; multi-turn: /v1/chat/completions)");
  c->add_option("--model", o->model, "Model sent in each body (default: first of GET /v1/models)");
  c->add_option("--api-key", o->api_key, "Bearer key (default: $OPENAI_API_KEY)");
  c->add_option("--dataset-name", o->dataset_name,
                "Prompts: random | shared-prefix | multi-turn | jsonl (see docs/bench_serve.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"random", "shared-prefix", "multi-turn", "jsonl"}));
  c->add_option("--dataset-path", o->dataset_path, "JSONL file for --dataset-name jsonl");
  c->add_option("--num-prompts", o->num_prompts, "Requests (random; jsonl: first N lines)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  c->add_option("--input-len,--random-input-len", o->input_len, "random: prompt tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  c->add_option("--output-len,--random-output-len", o->output_len, "Tokens to generate per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 24));
  c->add_option("--range-ratio,--random-range-ratio", o->range_ratio,
                "random: lengths uniform in len * [1 - r, 1 + r]")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.999));
  c->add_option("--vocab-size", o->vocab_size,
                "Token ids of random prompts are < this (default: from /v1/models, else probed)")
      ->check(CLI::Range(5, 1 << 30));
  c->add_option("--sp-num-groups", o->sp_num_groups, "shared-prefix: groups (distinct prefixes)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--sp-prefix-len", o->sp_prefix_len, "shared-prefix: prefix tokens per group")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  c->add_option("--sp-suffix-len", o->sp_suffix_len, "shared-prefix: unique tokens per prompt")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  c->add_option("--sp-num-prompts-per-group", o->sp_prompts_per_group,
                "shared-prefix: prompts per group")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--mt-num-sessions", o->mt_num_sessions, "multi-turn: chat sessions")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--mt-turns", o->mt_turns, "multi-turn: user turns per session")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  c->add_option("--mt-user-len", o->mt_user_len, "multi-turn: words per user message")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->add_option("--request-rate", o->request_rate,
                "Requests (multi-turn: sessions) per second, Poisson/gamma arrivals; inf = all at "
                "once")
      ->capture_default_str();
  c->add_option("--burstiness", o->burstiness, "Gamma shape of the gaps: 1 = Poisson")
      ->capture_default_str()
      ->check(CLI::Range(1e-3, 1e3));
  c->add_option("--max-concurrency", o->max_concurrency,
                "Most requests (multi-turn: sessions) in flight; 0 = no cap")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 16));
  c->add_option("--sweep-concurrency", o->sweep_concurrency,
                "Run once per max concurrency, e.g. 1,2,4,8,16")
      ->delimiter(',')
      ->check(CLI::Range(1, 1 << 16));
  c->add_option("--seed", o->seed, "Seeds the dataset and the arrivals")->capture_default_str();
  c->add_option("--num-warmups", o->num_warmups, "Requests sent before the clock starts")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  c->add_option("--temperature", o->temperature, "Sampling temperature of every request")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 2.0));
  c->add_flag("!--no-ignore-eos", o->ignore_eos, "Let EOS end outputs early");
  c->add_option("--extra-body", o->extra_body, "JSON object merged into every request body");
  c->add_option("--slo-ttft-ms", o->slo_ttft_ms, "Goodput SLO on TTFT")->check(CLI::PositiveNumber);
  c->add_option("--slo-tpot-ms", o->slo_tpot_ms, "Goodput SLO on TPOT")->check(CLI::PositiveNumber);
  c->add_option("--slo-e2el-ms", o->slo_e2el_ms, "Goodput SLO on E2E latency")
      ->check(CLI::PositiveNumber);
  c->add_option("--metric-percentiles", o->percentiles, "Percentiles to report")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  c->add_option("--save-result", o->save_result, "Write the results as JSON (vLLM field names)");
  c->add_flag("--save-texts", o->save_texts, "Include generated_texts in the JSON");
  c->add_option("--plot", o->plot, "Write latency CDFs (and the sweep chart) as SVG");
  c->add_flag("--progress", o->progress, "Progress bar on stderr even when it is not a tty");
  c->add_option("--timeout", o->timeout_s, "Seconds a stream may stay silent")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  return c;
}

int run_bench_serve(const BenchServeOptions& opt_in) {
  BenchServeOptions opt = opt_in;
  if (opt.api_key.empty()) {
    if (const char* k = std::getenv("OPENAI_API_KEY")) opt.api_key = k;
  }
  const bool is_multi_turn = opt.dataset_name == "multi-turn";
  if (opt.endpoint.empty())
    opt.endpoint = is_multi_turn ? "/v1/chat/completions" : "/v1/completions";
  if (is_multi_turn && !lg::is_chat_endpoint(opt.endpoint)) {
    return fail(
        invalid_argument("multi-turn sends chat messages: --endpoint must be a "
                         "chat/completions path"));
  }
  if (!is_multi_turn && lg::is_chat_endpoint(opt.endpoint)) {
    return fail(invalid_argument("--dataset-name " + opt.dataset_name +
                                 " sends completion prompts: use a /v1/completions endpoint"));
  }
  auto rate = parse_rate(opt.request_rate);
  if (!rate) return fail(rate.status());

  lg::ClientOptions client_opt;
  client_opt.base_url = opt.base_url;
  client_opt.api_key = opt.api_key;
  client_opt.read_timeout_s = opt.timeout_s;
  auto client = lg::OpenAiClient::create(client_opt);
  if (!client) return fail(client.status());

  json models = json::object();
  std::string model = opt.model;
  const bool needs_vocab = opt.dataset_name == "random" || opt.dataset_name == "shared-prefix";
  if (model.empty() || (needs_vocab && opt.vocab_size <= 0)) {
    auto m = (*client)->get_models();
    if (!m) return fail(m.status());
    models = *m;
    if (model.empty()) {
      auto id = lg::first_model_id(models);
      if (!id) return fail(id.status());
      model = *id;
    }
  }

  // The dataset.
  std::vector<lg::BenchRequest> requests;
  std::vector<lg::ChatSession> sessions;
  int32_t vocab_size = 0;
  if (needs_vocab) {
    auto v = resolve_vocab_size(opt, models, client->get(), model);
    if (!v) return fail(v.status());
    vocab_size = *v;
  }
  if (opt.dataset_name == "random") {
    auto d = lg::make_random_dataset(
        {opt.num_prompts, opt.input_len, opt.output_len, opt.range_ratio, vocab_size, opt.seed});
    if (!d) return fail(d.status());
    requests = std::move(*d);
  } else if (opt.dataset_name == "shared-prefix") {
    auto d = lg::make_shared_prefix_dataset({opt.sp_num_groups, opt.sp_prefix_len,
                                             opt.sp_suffix_len, opt.sp_prompts_per_group,
                                             opt.output_len, vocab_size, opt.seed});
    if (!d) return fail(d.status());
    requests = std::move(*d);
  } else if (opt.dataset_name == "jsonl") {
    if (opt.dataset_path.empty()) return fail(invalid_argument("jsonl needs --dataset-path"));
    auto d = lg::load_jsonl_dataset(opt.dataset_path, opt.output_len, opt.num_prompts);
    if (!d) return fail(d.status());
    requests = std::move(*d);
  } else {
    auto d = lg::make_multi_turn_sessions(
        {opt.mt_num_sessions, opt.mt_turns, opt.mt_user_len, opt.output_len, opt.seed});
    if (!d) return fail(d.status());
    sessions = std::move(*d);
  }

  lg::RunOptions run;
  run.endpoint = opt.endpoint;
  run.body.model = model;
  run.body.temperature = opt.temperature;
  run.body.ignore_eos = opt.ignore_eos;
  if (!opt.extra_body.empty()) {
    run.body.extra_body = json::parse(opt.extra_body, nullptr, false);
    if (!run.body.extra_body.is_object()) {
      return fail(invalid_argument("--extra-body must be a JSON object"));
    }
  }
  run.request_rate = *rate;
  run.burstiness = opt.burstiness;
  run.seed = opt.seed;
  run.num_warmups = opt.num_warmups;
  if (opt.slo_ttft_ms > 0) run.slo.ttft_ms = opt.slo_ttft_ms;
  if (opt.slo_tpot_ms > 0) run.slo.tpot_ms = opt.slo_tpot_ms;
  if (opt.slo_e2el_ms > 0) run.slo.e2el_ms = opt.slo_e2el_ms;
  run.percentiles = opt.percentiles;
  run.show_progress = opt.progress || isatty(STDERR_FILENO) == 1;
  run.keep_text = opt.save_texts;

  const int64_t num_items = is_multi_turn ? static_cast<int64_t>(sessions.size()) * opt.mt_turns
                                          : static_cast<int64_t>(requests.size());
  json config{{"date", utc_now()},
              {"backend", is_multi_turn ? "openai-chat" : "openai"},
              {"base_url", opt.base_url},
              {"endpoint", opt.endpoint},
              {"model_id", model},
              {"dataset_name", opt.dataset_name},
              {"num_prompts", num_items},
              {"request_rate", std::isinf(*rate) ? json("inf") : json(*rate)},
              {"burstiness", opt.burstiness},
              {"seed", opt.seed},
              {"temperature", opt.temperature},
              {"ignore_eos", opt.ignore_eos},
              {"num_warmups", opt.num_warmups}};
  if (needs_vocab) config["vocab_size"] = vocab_size;
  if (opt.dataset_name == "random") {
    config["input_len"] = opt.input_len;
    config["output_len"] = opt.output_len;
    config["range_ratio"] = opt.range_ratio;
  } else if (opt.dataset_name == "shared-prefix") {
    config["sp_num_groups"] = opt.sp_num_groups;
    config["sp_prefix_len"] = opt.sp_prefix_len;
    config["sp_suffix_len"] = opt.sp_suffix_len;
    config["sp_num_prompts_per_group"] = opt.sp_prompts_per_group;
    config["output_len"] = opt.output_len;
  } else if (opt.dataset_name == "jsonl") {
    config["dataset_path"] = opt.dataset_path;
  } else {
    config["mt_num_sessions"] = opt.mt_num_sessions;
    config["mt_turns"] = opt.mt_turns;
    config["mt_user_len"] = opt.mt_user_len;
    config["output_len"] = opt.output_len;
  }
  if (run.slo.ttft_ms) config["slo_ttft_ms"] = *run.slo.ttft_ms;
  if (run.slo.tpot_ms) config["slo_tpot_ms"] = *run.slo.tpot_ms;
  if (run.slo.e2el_ms) config["slo_e2el_ms"] = *run.slo.e2el_ms;

  std::vector<int32_t> concurrencies = opt.sweep_concurrency;
  const bool is_sweep = !concurrencies.empty();
  if (!is_sweep) concurrencies.push_back(opt.max_concurrency);

  std::vector<json> results;
  std::vector<lg::LatencySamples> samples;
  std::vector<lg::SweepPoint> sweep_points;
  std::vector<lg::SweepRow> sweep_rows;
  bool has_empty_run = false;
  for (int32_t c : concurrencies) {
    run.max_concurrency = c;
    if (is_sweep) std::printf("--- max concurrency %d ---\n", c);
    std::fflush(stdout);
    auto r = is_multi_turn ? lg::run_multi_turn_benchmark(client_opt, run, sessions)
                           : lg::run_benchmark(client_opt, run, requests);
    if (!r) return fail(r.status());
    std::fputs(lg::format_report(r->metrics, {c, *rate}).c_str(), stdout);
    std::fflush(stdout);
    if (r->metrics.num_completed == 0) has_empty_run = true;
    json cfg = config;
    cfg["max_concurrency"] = c > 0 ? json(c) : json(nullptr);
    results.push_back(lg::make_result_json(*r, cfg, opt.save_texts));
    samples.push_back(lg::latency_samples_of(
        r->outcomes, c > 0 ? "concurrency " + std::to_string(c) : std::string("no cap")));
    sweep_points.push_back({c, r->metrics.output_throughput, r->metrics.tpot.mean_ms});
    sweep_rows.push_back({c, r->metrics});
  }
  if (is_sweep) std::fputs(lg::format_sweep_table(sweep_rows).c_str(), stdout);

  if (!opt.save_result.empty()) {
    json out = results.front();
    if (is_sweep) {
      out = config;
      out["sweep_concurrency"] = concurrencies;
      out["runs"] = results;
    }
    if (Status s = lg::write_json_file(opt.save_result, out); !s) return fail(s);
  }
  if (!opt.plot.empty()) {
    const std::string title =
        "strata bench serve: " + model + " @ " + opt.base_url + " (" + opt.dataset_name + ")";
    const std::string svg = lg::render_benchmark_svg(
        title, samples, is_sweep ? sweep_points : std::vector<lg::SweepPoint>{});
    std::ofstream f(opt.plot, std::ios::binary | std::ios::trunc);
    f << svg;
    f.close();
    if (!f) return fail(io_error("cannot write " + opt.plot));
  }
  return has_empty_run ? 1 : 0;
}

}  // namespace strata::cli
