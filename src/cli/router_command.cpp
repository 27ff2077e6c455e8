// `strata router`: the OpenAI-compatible front for N `strata serve`
// replicas (router/router_server.h, docs/router.md). Reads only the GGUF's
// tokenizer and chat template (the file is mapped; no weight page is
// touched). SIGHUP reloads --replicas-file; SIGTERM/SIGINT stop.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "gguf/gguf.h"
#include "router/router_server.h"
#include "tokenizer/tokenizer.h"

namespace strata::cli {
namespace {

int g_router_signal_pipe[2] = {-1, -1};

void on_router_signal(int sig) {
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(g_router_signal_pipe[1], &b, 1);
}

}  // namespace

CLI::App* add_router_command(CLI::App* app, RouterCommandOptions* opt) {
  auto* cmd = app->add_subcommand(
      "router", "OpenAI-compatible front for strata serve replicas, cache-aware routing");
  cmd->add_option("-m,--model", opt->model_path,
                  "GGUF the replicas serve (only its tokenizer and chat template are read)");
  cmd->add_option("--host", opt->host)->capture_default_str();
  cmd->add_option("--port", opt->port, "0 = any free port")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--replica", opt->replicas, "Replica base URL (http://host:port), repeatable");
  cmd->add_option("--decode", opt->decode_workers,
                  "Decode worker base URL (strata serve --role decode), repeatable: routed to as "
                  "replicas");
  cmd->add_option("--prefill", opt->prefill_workers,
                  "Prefill worker base URL (strata serve --role prefill), repeatable: never "
                  "routed to; the decode workers ask it over --prefill-peer");
  cmd->add_option("--replicas-file", opt->replicas_file,
                  "File of replica URLs, one a line; reloaded on SIGHUP");
  cmd->add_option("--policy", opt->policy, "cache-aware | least-load | round-robin | session")
      ->capture_default_str();
  cmd->add_option("--api-key", opt->api_key, "Bearer key clients must send (default: none)");
  cmd->add_option("--replica-api-key", opt->replica_api_key, "Bearer key sent to replicas");
  cmd->add_option("--probe-timeout-ms", opt->probe_timeout_ms,
                  "How long a request waits for probe answers")
      ->capture_default_str()
      ->check(CLI::Range(1, 60000));
  cmd->add_option("--max-probe-candidates", opt->max_probe_candidates,
                  "Probe at most this many least-busy replicas; 0 = all")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-retries", opt->max_retries,
                  "Retries on other replicas before the first byte")
      ->capture_default_str()
      ->check(CLI::Range(0, 16));
  cmd->add_option("--connect-timeout-ms", opt->connect_timeout_ms)
      ->capture_default_str()
      ->check(CLI::Range(1, 600000));
  cmd->add_option("--health-interval-ms", opt->health_interval_ms)
      ->capture_default_str()
      ->check(CLI::Range(10, 600000));
  cmd->add_option("--health-timeout-ms", opt->health_timeout_ms)
      ->capture_default_str()
      ->check(CLI::Range(1, 600000));
  cmd->add_option("--failure-threshold", opt->failure_threshold,
                  "Consecutive failures that eject a replica")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--block-size", opt->block_size,
                  "KV block size to hash with until a replica names its own")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--io-threads", opt->num_io_threads)
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--worker-threads", opt->num_worker_threads,
                  "Threads that tokenize and wait for probes")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--chat-template", opt->chat_template_path,
                  "Jinja chat template file, as the replicas' --chat-template (default: the "
                  "model's, else ChatML)");
  return cmd;
}

int run_router(const RouterCommandOptions& opt) {
  if (pipe(g_router_signal_pipe) != 0) {
    return fail(Status(StatusCode::kIoError, "router: pipe() failed"));
  }
  struct sigaction sa {};
  sa.sa_handler = on_router_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const std::string path = opt.model_path.empty() ? default_model_path() : opt.model_path;
  Result<GgufFile> gguf = GgufFile::open(path);
  if (!gguf) return fail(gguf.status());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_gguf(*gguf);
  if (!tokenizer) return fail(tokenizer.status());

  // Prompts must be built exactly as the replicas build them.
  Result<server::ChatTemplate> chat_template =
      opt.chat_template_path.empty()
          ? server::ChatTemplate::for_model(**tokenizer)
          : server::ChatTemplate::from_file(opt.chat_template_path, **tokenizer);
  if (!chat_template) return fail(chat_template.status());
  if (!opt.chat_template_path.empty()) {
    std::fprintf(stderr, "[router] chat template: %s (--chat-template)\n",
                 opt.chat_template_path.c_str());
  } else if (chat_template->is_fallback()) {
    std::fprintf(stderr, "[router] the model has no chat template; falling back to ChatML\n");
  }

  router::RouterOptions o;
  o.chat_template = std::make_shared<const server::ChatTemplate>(std::move(*chat_template));
  o.host = opt.host;
  o.port = static_cast<uint16_t>(opt.port);
  o.replicas = opt.replicas;
  o.replicas.insert(o.replicas.end(), opt.decode_workers.begin(), opt.decode_workers.end());
  if (!opt.replicas_file.empty()) {
    Result<std::vector<std::string>> urls = router::read_replicas_file(opt.replicas_file);
    if (!urls) return fail(urls.status());
    o.replicas.insert(o.replicas.end(), urls->begin(), urls->end());
  }
  if (o.replicas.empty()) {
    return fail(invalid_argument(
        "router: no replicas (give --replica URL, --decode URL or --replicas-file)"));
  }
  Result<router::Policy> policy = router::parse_policy(opt.policy);
  if (!policy) return fail(policy.status());
  o.policy = *policy;
  o.api_key = opt.api_key;
  o.replica_api_key = opt.replica_api_key;
  o.probe_timeout = std::chrono::milliseconds(opt.probe_timeout_ms);
  o.max_probe_candidates = static_cast<size_t>(opt.max_probe_candidates);
  o.max_retries = opt.max_retries;
  o.connect_timeout = std::chrono::milliseconds(opt.connect_timeout_ms);
  o.health_interval = std::chrono::milliseconds(opt.health_interval_ms);
  o.health_timeout = std::chrono::milliseconds(opt.health_timeout_ms);
  o.breaker.failure_threshold = opt.failure_threshold;
  o.block_size = opt.block_size;
  o.num_io_threads = opt.num_io_threads;
  o.num_worker_threads = opt.num_worker_threads;
  std::vector<std::string> command_line_replicas = opt.replicas;
  command_line_replicas.insert(command_line_replicas.end(), opt.decode_workers.begin(),
                               opt.decode_workers.end());

  Result<std::unique_ptr<router::RouterServer>> server =
      router::RouterServer::create(**tokenizer, std::move(o));
  if (!server) return fail(server.status());
  if (Status s = (*server)->start(); !s.is_ok()) return fail(s);
  std::fprintf(stderr, "[router] listening on http://%s:%u, policy %s, %zu replicas\n",
               opt.host.c_str(), static_cast<unsigned>((*server)->port()), opt.policy.c_str(),
               (*server)->replica_urls().size());
  for (const std::string& url : opt.prefill_workers) {
    std::fprintf(stderr, "[router] prefill pool: %s (reached by the decode workers)\n",
                 url.c_str());
  }
  std::fflush(stderr);

  while (true) {
    unsigned char b = 0;
    const ssize_t n = read(g_router_signal_pipe[0], &b, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (b != SIGHUP) {
      std::fprintf(stderr, "[router] signal %d: stopping\n", static_cast<int>(b));
      break;
    }
    if (opt.replicas_file.empty()) {
      std::fprintf(stderr, "[router] SIGHUP: no --replicas-file to reload\n");
      continue;
    }
    Result<std::vector<std::string>> urls = router::read_replicas_file(opt.replicas_file);
    if (!urls) {
      std::fprintf(stderr, "[router] SIGHUP: %s; keeping the replica list\n",
                   urls.status().message().c_str());
      continue;
    }
    std::vector<std::string> all = command_line_replicas;
    all.insert(all.end(), urls->begin(), urls->end());
    if (Status s = (*server)->set_replicas(all); !s.is_ok()) {
      std::fprintf(stderr, "[router] SIGHUP: %s; keeping the replica list\n", s.message().c_str());
      continue;
    }
    std::fprintf(stderr, "[router] reloaded %s: %zu replicas\n", opt.replicas_file.c_str(),
                 all.size());
    std::fflush(stderr);
  }
  (*server)->stop();
  std::fprintf(stderr, "[router] stopped\n");
  return 0;
}

}  // namespace strata::cli
