// The `strata` subcommands. main() parses flags with CLI11 into these plain
// option structs and calls the matching run_* function, which returns the
// process exit code. Errors are printed as one line on stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/disagg_flags.h"
#include "cli/engine_flags.h"
#include "parallel/process_group.h"
#include "server/openai_server.h"
#include "util/status.h"

namespace CLI {
class App;
}

namespace strata::cli {

// Prints the error as one line on stderr ("error: ..."); returns exit code 1.
int fail(const Status& s);

// The model used when no -m is given: models/default.gguf in the source tree
// if present, else the one `make models` generates in the build directory.
std::string default_model_path();

struct InspectOptions {
  std::string model_path;
  bool show_all_array_elements = false;
};
int run_inspect(const InspectOptions& opt);

struct TokenizeOptions {
  std::string model_path;
  std::string text;
  bool add_special = true;
  bool parse_special = true;
  bool ids_only = false;
};
int run_tokenize(const TokenizeOptions& opt);

struct GenerateOptions {
  std::string model_path;
  std::string prompt;
  int32_t max_tokens = 128;
  float temperature = 0.8f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repetition_penalty = 1.0f;
  uint64_t seed = 0;
  int32_t num_threads = 0;     // 0 = hardware concurrency
  int32_t context_tokens = 0;  // 0 = the model's context length
  bool ignore_eos = false;
  ParallelOptions parallel;  // --tensor-parallel-size, --pipeline-parallel-size
  // Speculative decoding (JSON as vLLM takes it); non-empty runs the
  // prompt through the serving engine instead of a bare sequence.
  std::string speculative_config;
};
int run_generate(const GenerateOptions& opt);

struct BenchForwardOptions {
  std::string model_path;
  int32_t prompt_tokens = 512;
  int32_t gen_tokens = 128;
  int32_t num_threads = 0;
  int32_t reps = 3;
  bool json = false;
};
int run_bench_forward(const BenchForwardOptions& opt);

// `strata bench throughput`: offline serving throughput through the engine.
// num_prompts requests of prefix_len shared + input_len unique random tokens
// (input_len varies by +-random_range_ratio), each generating exactly
// output_len tokens (greedy, EOS ignored), at most max_concurrency in flight
// (0 = all at once).
struct BenchThroughputOptions {
  std::string model_path;
  int32_t num_prompts = 32;
  int32_t input_len = 128;
  int32_t output_len = 64;
  int32_t prefix_len = 0;
  int32_t max_concurrency = 0;
  double random_range_ratio = 0.0;
  uint64_t seed = 0;
  bool json = false;
  // JSON lines, each a prompt string (or {"prompt": "..."}), tokenized with
  // the model's tokenizer and used in turn instead of random ids (the
  // speculative decoding benchmark's workloads); --input-len and
  // --prefix-len are then unused.
  std::string prompts_path;
  EngineFlags engine;
  ParallelOptions parallel;
};
int run_bench_throughput(const BenchThroughputOptions& opt);

// `strata bench serve`: a load generator for any OpenAI-compatible server
// (docs/bench_serve.md). Streams every request and reports TTFT, TPOT, ITL,
// E2E latency, throughput and goodput like vLLM's `bench serve`.
struct BenchServeOptions {
  std::string base_url = "http://127.0.0.1:8000";  // `strata serve`'s default address
  std::string endpoint;  // empty = /v1/completions (multi-turn: /v1/chat/completions)
  std::string model;     // empty = the first of GET /v1/models
  std::string api_key;   // empty = $OPENAI_API_KEY
  std::string dataset_name = "random";  // random | shared-prefix | multi-turn | jsonl
  std::string dataset_path;
  int64_t num_prompts = 100;
  int32_t input_len = 128;
  int32_t output_len = 128;
  double range_ratio = 0.0;
  int32_t vocab_size = 0;  // 0 = from /v1/models, else probed
  int32_t sp_num_groups = 4;
  int32_t sp_prefix_len = 256;
  int32_t sp_suffix_len = 64;
  int32_t sp_prompts_per_group = 8;
  int32_t mt_num_sessions = 8;
  int32_t mt_turns = 4;
  int32_t mt_user_len = 32;
  std::string request_rate = "inf";
  double burstiness = 1.0;
  int32_t max_concurrency = 0;
  std::vector<int32_t> sweep_concurrency;
  uint64_t seed = 0;
  int32_t num_warmups = 1;
  double temperature = 0.0;
  bool ignore_eos = true;
  std::string extra_body;
  double slo_ttft_ms = 0.0;  // 0 = no SLO
  double slo_tpot_ms = 0.0;
  double slo_e2el_ms = 0.0;
  std::vector<double> percentiles = {50.0, 90.0, 99.0};
  std::string save_result;
  bool save_texts = false;
  std::string plot;
  bool progress = false;
  double timeout_s = 600.0;
};
// Registers `serve` under the `bench` subcommand, writing into opt.
CLI::App* add_bench_serve_command(CLI::App* bench, BenchServeOptions* opt);
int run_bench_serve(const BenchServeOptions& opt);

// `strata serve`: the OpenAI-compatible HTTP server over the engine. The
// api key comes from --api-key or, when absent, from STRATA_API_KEY (read by
// main). SIGTERM/SIGINT drain: no new requests, in-flight ones finish within
// drain_timeout_s, then the process exits.
struct ServeOptions {
  std::string model_path;
  std::string served_model_name;  // empty = the model file's stem
  // The HTTP server's knobs, bound to the flags (its defaults are theirs);
  // served_model_name, max_body_bytes and the engine-derived limits are
  // filled by run_serve.
  server::ServerOptions server;
  std::string max_body_bytes = format_byte_size(server::ServerOptions{}.max_body_bytes);
  int32_t drain_timeout_s = 30;  // seconds in-flight requests get after SIGTERM
  // Measure the machine's ceilings at start-up (~0.1 s) for the roofline
  // floors in /metrics (--no-roofline: time and work only).
  bool roofline = true;
  EngineFlags engine;
  DisaggFlags disagg;  // --role and the KV transfer channel
  ParallelOptions parallel;
};
int run_serve(const ServeOptions& opt);

// `strata router`: the front for N `strata serve` replicas (router_command.cpp).
struct RouterCommandOptions {
  std::string model_path;
  std::string host = "127.0.0.1";
  int32_t port = 8000;
  std::vector<std::string> replicas;
  // Disaggregated serving (docs/disagg.md): generations go to the decode
  // pool (as replicas); the prefill pool is reached by the decode workers
  // over their own KV transfer channels.
  std::vector<std::string> decode_workers;
  std::vector<std::string> prefill_workers;
  std::string replicas_file;
  std::string policy = "cache-aware";
  std::string api_key;
  std::string replica_api_key;
  int32_t probe_timeout_ms = 50;
  int32_t max_probe_candidates = 0;
  int32_t max_retries = 2;
  int32_t connect_timeout_ms = 2000;
  int32_t health_interval_ms = 1000;
  int32_t health_timeout_ms = 1000;
  int32_t failure_threshold = 3;
  int32_t block_size = 16;
  int32_t num_io_threads = 2;
  int32_t num_worker_threads = 8;
  std::string chat_template_path;  // --chat-template; empty = the model's
};
CLI::App* add_router_command(CLI::App* app, RouterCommandOptions* opt);
int run_router(const RouterCommandOptions& opt);

}  // namespace strata::cli
