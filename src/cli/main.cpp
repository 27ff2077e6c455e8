// strata: command-line entry point. Only this file reads flags.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/commands.h"
#include "cli/flag_suggestion.h"
#include "cli/parallel_flags.h"

int main(int argc, char** argv) {
  CLI::App app{"strata: an LLM serving engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strata 0.1.0");

  strata::cli::InspectOptions inspect;
  auto* inspect_cmd = app.add_subcommand("inspect", "Show a GGUF file's metadata and tensors");
  inspect_cmd->add_option("model", inspect.model_path, "GGUF file")->required();
  inspect_cmd->add_flag("--all", inspect.show_all_array_elements, "Print every array element");

  strata::cli::TokenizeOptions tok;
  auto* tok_cmd = app.add_subcommand("tokenize", "Print the token ids of a text");
  tok_cmd->add_option("-m,--model", tok.model_path, "GGUF file (default: the bundled model)");
  tok_cmd->add_option("text", tok.text, "Text to tokenize")->required();
  tok_cmd->add_flag("!--no-bos", tok.add_special, "Do not add BOS/EOS");
  tok_cmd->add_flag("!--no-parse-special", tok.parse_special,
                    "Treat special-token text as plain text");
  tok_cmd->add_flag("--ids", tok.ids_only, "Print only the ids");

  strata::cli::GenerateOptions gen;
  auto* gen_cmd = app.add_subcommand("generate", "Generate a continuation of a prompt");
  gen_cmd->add_option("-m,--model", gen.model_path, "GGUF file (default: the bundled model)");
  gen_cmd->add_option("-p,--prompt", gen.prompt, "Prompt text")->required();
  gen_cmd->add_option("-n,--max-tokens", gen.max_tokens, "Tokens to generate")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  gen_cmd->add_option("--temperature", gen.temperature, "0 = greedy")
      ->capture_default_str()
      ->check(CLI::Range(0.0f, 100.0f));
  gen_cmd->add_option("--top-k", gen.top_k, "0 = off")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  gen_cmd->add_option("--top-p", gen.top_p, "Nucleus sampling: the smallest set of this mass")
      ->capture_default_str()
      ->check(CLI::Range(0.0f, 1.0f));
  gen_cmd->add_option("--min-p", gen.min_p, "Drop tokens below this fraction of the top one")
      ->capture_default_str()
      ->check(CLI::Range(0.0f, 1.0f));
  gen_cmd
      ->add_option("--repetition-penalty", gen.repetition_penalty,
                   "Divides the logits of tokens seen so far; 1 = off")
      ->capture_default_str()
      ->check(CLI::Range(0.01f, 100.0f));
  gen_cmd->add_option("--seed", gen.seed, "Sampling seed")->capture_default_str();
  gen_cmd->add_option("-t,--threads", gen.num_threads, "0 = all cores")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  gen_cmd->add_option("-c,--ctx-size", gen.context_tokens, "0 = the model's context length")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 24));
  gen_cmd->add_flag("--ignore-eos", gen.ignore_eos, "Keep generating past end-of-sequence");
  strata::cli::add_parallel_flags(gen_cmd, &gen.parallel);
  gen_cmd->add_option("--speculative-config", gen.speculative_config,
                      "Speculative decoding, JSON as vLLM takes it, e.g. {\"method\": \"ngram\", "
                      "\"num_speculative_tokens\": 4}");

  auto* bench_cmd = app.add_subcommand("bench", "Benchmarks");
  bench_cmd->require_subcommand(1);
  strata::cli::BenchForwardOptions bf;
  auto* bf_cmd = bench_cmd->add_subcommand(
      "forward", "Single-stream prefill and decode speed (like llama-bench pp/tg)");
  bf_cmd->add_option("-m,--model", bf.model_path, "GGUF file (default: the bundled model)");
  bf_cmd->add_option("--prompt", bf.prompt_tokens, "Prompt tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  bf_cmd->add_option("--gen", bf.gen_tokens, "Decoded tokens")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  bf_cmd->add_option("-t,--threads", bf.num_threads, "0 = all cores")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  bf_cmd->add_option("--reps", bf.reps, "Repetitions (the median is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  bf_cmd->add_flag("--json", bf.json, "One JSON line instead of a table");

  strata::cli::BenchThroughputOptions bt;
  auto* bt_cmd = bench_cmd->add_subcommand(
      "throughput", "Offline serving throughput: requests/s and tokens/s through the engine");
  bt_cmd->add_option("-m,--model", bt.model_path, "GGUF file (default: the bundled model)");
  bt_cmd->add_option("--num-prompts", bt.num_prompts, "Requests")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  bt_cmd->add_option("--input-len", bt.input_len, "Unique prompt tokens per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  bt_cmd->add_option("--output-len", bt.output_len, "Tokens generated per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  bt_cmd->add_option("--prefix-len", bt.prefix_len, "Prompt tokens shared by every request")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  bt_cmd->add_option("--max-concurrency", bt.max_concurrency, "Requests in flight; 0 = all")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  bt_cmd
      ->add_option("--random-range-ratio", bt.random_range_ratio,
                   "Input lengths uniform in input-len * [1 - r, 1 + r]")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  bt_cmd->add_option("--seed", bt.seed, "Seeds the prompts")->capture_default_str();
  bt_cmd->add_flag("--json", bt.json, "One JSON line instead of a table");
  bt_cmd->add_option("--prompts", bt.prompts_path,
                     "JSON lines of prompt strings (or {\"prompt\": ...}) used in turn instead "
                     "of random ids");
  strata::cli::add_engine_flags(bt_cmd, &bt.engine);
  strata::cli::add_parallel_flags(bt_cmd, &bt.parallel);
  strata::cli::BenchServeOptions bs;
  auto* bs_cmd = strata::cli::add_bench_serve_command(bench_cmd, &bs);

  strata::cli::ServeOptions serve;
  auto* serve_cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server");
  // `strata serve MODEL` as `vllm serve MODEL`; -m MODEL as the other commands.
  serve_cmd->add_option("model,-m,--model", serve.model_path,
                        "GGUF file (default: the bundled model)");
  serve_cmd->add_option("--host", serve.server.host, "Address to listen on")->capture_default_str();
  serve_cmd->add_option("--port", serve.server.port, "0 = any free port")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  serve_cmd->add_option("--served-model-name", serve.served_model_name,
                        "Model id clients send (default: the file's stem)");
  serve_cmd->add_option("--api-key", serve.server.api_key, "Bearer key (default: $STRATA_API_KEY)");
  serve_cmd
      ->add_option("--tool-call-parser", serve.server.tool_call_parser,
                   "Tool-call syntax (default: from the chat template, else hermes)")
      ->check(CLI::IsMember({"hermes", "llama3_json", "mistral"}));
  serve_cmd
      ->add_option("--max-queue", serve.server.max_queue,
                   "Requests held beyond --max-num-seqs before 429")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  serve_cmd
      ->add_option("--max-body-bytes", serve.max_body_bytes,
                   "Largest request body (suffix K/M/G[iB]); larger ones get 413")
      ->capture_default_str();
  serve_cmd->add_option("--header-timeout", serve.server.header_timeout_s, "Seconds")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  serve_cmd
      ->add_option("--request-timeout", serve.server.request_timeout_s,
                   "Seconds for the request body to arrive")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  serve_cmd->add_option("--idle-timeout", serve.server.idle_timeout_s, "Keep-alive seconds")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  serve_cmd->add_flag("!--no-roofline", serve.roofline,
                      "Skip measuring this machine's bandwidth and arithmetic peaks at start-up "
                      "(/metrics then has no strata:forward_phase_floor_seconds)");
  serve_cmd
      ->add_option("--write-timeout", serve.server.write_timeout_s, "Seconds a write may block")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  serve_cmd->add_option("--max-n", serve.server.limits.max_n, "Most choices per request")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  serve_cmd
      ->add_option("--http-threads", serve.server.num_http_threads,
                   "HTTP I/O threads (each serves many connections)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  serve_cmd
      ->add_option("--http-worker-threads", serve.server.num_worker_threads,
                   "Threads that parse and tokenize request bodies")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  serve_cmd
      ->add_option("--max-connections", serve.server.max_connections,
                   "Open connections; past it a new one gets 503")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  serve_cmd
      ->add_option("--drain-timeout", serve.drain_timeout_s,
                   "Seconds in-flight requests get after SIGTERM")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600));
  serve_cmd->add_option("--log-interval", serve.server.log_interval_s, "Seconds; 0 = off")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  serve_cmd->add_option("--chat-template", serve.server.chat_template_path,
                        "Jinja chat template file (default: the model's, else ChatML)");
  serve_cmd->add_option(
      "--reasoning-parser", serve.server.reasoning_parser_name,
      "Split chat output into reasoning_content and content: deepseek_r1 | qwen3");
  strata::cli::add_engine_flags(serve_cmd, &serve.engine);
  strata::cli::add_disagg_flags(serve_cmd, &serve.disagg);
  strata::cli::add_parallel_flags(serve_cmd, &serve.parallel);

  strata::cli::RouterCommandOptions router;
  auto* router_cmd = strata::cli::add_router_command(&app, &router);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A mistyped flag or command gets the closest name; other errors
    // (--help, bad values) CLI11's own message.
    const std::string unknown = strata::cli::unknown_argument_message(app);
    if (unknown.empty() || e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "error: %s\n", unknown.c_str());
    return e.get_exit_code();
  }
  if (*serve_cmd && serve.server.api_key.empty()) {
    if (const char* key = std::getenv("STRATA_API_KEY")) serve.server.api_key = key;
  }

  if (*inspect_cmd) return strata::cli::run_inspect(inspect);
  if (*tok_cmd) return strata::cli::run_tokenize(tok);
  if (*gen_cmd) return strata::cli::run_generate(gen);
  if (*bf_cmd) return strata::cli::run_bench_forward(bf);
  if (*bt_cmd) return strata::cli::run_bench_throughput(bt);
  if (*bs_cmd) return strata::cli::run_bench_serve(bs);
  if (*serve_cmd) return strata::cli::run_serve(serve);
  if (*router_cmd) return strata::cli::run_router(router);
  return 1;
}
