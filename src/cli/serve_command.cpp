// `strata serve`: loads the model, starts the engine and the OpenAI server,
// and drains on SIGTERM/SIGINT: the listener closes (open connections get
// 503 for new generations, /health 503) while in-flight requests finish, up
// to --drain-timeout seconds; the rest are aborted (their clients get a
// final error), and the process exits 0.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/parallel_flags.h"
#include "cli/startup_log.h"
#include "disagg/worker_role.h"
#include "engine/engine.h"
#include "http/http_server.h"
#include "kernels/roofline.h"
#include "model/model_weights.h"
#include "server/openai_server.h"
#include "tokenizer/tokenizer.h"

namespace strata::cli {
namespace {

int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  const unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &b, 1);
}

}  // namespace

int run_serve(const ServeOptions& opt) {
  // SIGTERM/SIGINT only write their number to a pipe (any thread may take
  // them: kernel and engine threads exist already); a waiter thread drains.
  if (pipe(g_signal_pipe) != 0) return fail(Status(StatusCode::kIoError, "serve: pipe() failed"));
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // Flag mistakes fail before the model loads.
  std::optional<server::ReasoningParserKind> reasoning =
      server::reasoning_parser_from_name(opt.server.reasoning_parser_name);
  if (!reasoning) {
    return fail(invalid_argument("unknown --reasoning-parser '" + opt.server.reasoning_parser_name +
                                 "' (expected deepseek_r1 or qwen3)"));
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string path = opt.model_path.empty() ? default_model_path() : opt.model_path;
  // Under mpirun: ranks other than 0 only run their shard of every step.
  Result<std::unique_ptr<ProcessGroup>> group = start_parallel(opt.parallel);
  if (!group) return fail(group.status());
  if (*group && !(*group)->layout().is_driver()) {
    return run_worker_rank(**group, path, opt.engine.options.num_threads);
  }
  Result<ModelWeights> weights = ModelWeights::open(path, group->get());
  if (!weights) return fail(weights.status());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_gguf(weights->file());
  if (!tokenizer) return fail(tokenizer.status());
  Result<EngineOptions> engine_options = to_engine_options(opt.engine);
  if (!engine_options) return fail(engine_options.status());
  if (opt.roofline) {
    // Before the engine's pool exists (two pools would compete).
    ThreadPool pool(engine_options->num_threads > 0
                        ? engine_options->num_threads
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
    engine_options->ceilings = measure_machine_ceilings(pool, /*quick=*/true);
  }
  Result<size_t> max_body = parse_byte_size(opt.max_body_bytes);
  if (!max_body) return fail(max_body.status());
  Result<disagg::WorkerRoleOptions> role_options = to_worker_role_options(opt.disagg);
  if (!role_options) return fail(role_options.status());
  if (*group && role_options->role != disagg::WorkerRole::kBoth) {
    return fail(invalid_argument(
        "--role prefill|decode does not work with --tensor-parallel-size or "
        "--pipeline-parallel-size > 1 yet: the KV transfer moves whole blocks, each rank holds "
        "only its slice"));
  }
  // Declared before the engine: the engine's connector reports into its
  // metrics, and its transfer server is stopped before the engine goes.
  Result<std::unique_ptr<disagg::WorkerRoleSetup>> role =
      disagg::WorkerRoleSetup::create(*weights, *engine_options, std::move(*role_options));
  if (!role) return fail(role.status());
  Result<std::unique_ptr<Engine>> engine =
      Engine::create(*weights, **tokenizer, *engine_options, (*role)->connector_factory());
  if (!engine) return fail(engine.status());
  std::fprintf(stderr, "[serve] engine ready in %.2f s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  for (const std::string& line : startup_log_lines(path, *weights, **engine)) {
    std::fprintf(stderr, "[serve] %s\n", line.c_str());
  }

  server::ServerOptions so = opt.server;
  so.reasoning_parser = *reasoning;
  // The template every chat request renders: --chat-template FILE, else the
  // model's own, else ChatML. One that does not parse stops the start-up.
  const bool has_own_template = (*tokenizer)->has_chat_template();
  Result<server::ChatTemplate> chat_template =
      so.chat_template_path.empty()
          ? server::ChatTemplate::for_model(**tokenizer)
          : server::ChatTemplate::from_file(so.chat_template_path, **tokenizer);
  if (!chat_template) {
    return fail(Status(chat_template.status().code(),
                       chat_template.status().message() +
                           (so.chat_template_path.empty()
                                ? " (the model's tokenizer.chat_template; --chat-template FILE "
                                  "overrides it)"
                                : "")));
  }
  so.chat_template = std::make_shared<const server::ChatTemplate>(std::move(*chat_template));
  so.served_model_name = opt.served_model_name.empty() ? std::filesystem::path(path).stem().string()
                                                       : opt.served_model_name;
  so.max_body_bytes = *max_body;
  if ((*role)->role() != disagg::WorkerRole::kBoth) {
    so.extra_metrics_text = [r = role->get(), name = so.served_model_name] {
      return r->metrics_text(name);
    };
  }
  // Migration (docs/disagg.md): a decode worker serving its KV can hand its
  // running requests to another decode worker when drained.
  if ((*role)->role() == disagg::WorkerRole::kDecode && opt.disagg.options.decode_serves_kv) {
    disagg::WorkerRoleSetup* r = role->get();
    auto asks_base = std::make_shared<std::atomic<int64_t>>(0);
    // Called once, when a drain starts migrating.
    so.migration_kv_peer = [r, asks_base] {
      asks_base->store(r->metrics().snapshot().asks_served);
      return r->transfer_address();
    };
    so.on_migration = [r](bool out) { r->mutable_metrics().add_migration(out); };
    so.wait_kv_pulled = [r, asks_base](int64_t n, std::chrono::steady_clock::time_point deadline) {
      // Each migrated request's receiver asks once (one with less than a
      // chunk of KV asks nothing: a quiet channel for a while ends it too).
      auto quiet_since = std::chrono::steady_clock::now();
      while (std::chrono::steady_clock::now() < deadline) {
        const disagg::DisaggMetricsSnapshot s = r->metrics().snapshot();
        if (s.asks_served - asks_base->load() >= n && s.transfers_active == 0) return;
        if (s.transfers_active > 0) quiet_since = std::chrono::steady_clock::now();
        if (std::chrono::steady_clock::now() - quiet_since > std::chrono::seconds(3)) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    };
  }
  // Every connection is a descriptor: the default soft limit (often 1024)
  // would refuse connections long before --max-connections.
  const uint64_t wanted_fds = static_cast<uint64_t>(so.max_connections) + 256;
  if (Result<uint64_t> fds = http::raise_open_file_limit(wanted_fds); !fds) {
    std::fprintf(stderr, "[serve] warning: %s; --max-connections %d will not be reached\n",
                 fds.status().message().c_str(), so.max_connections);
  }
  server::OpenAiServer server(**engine, **tokenizer, so);
  // A failed rank: new requests and /health get 503 until the group exits.
  if (*group) (*group)->set_fault_hook([&server] { server.begin_drain(); });
  if (Status s = server.bind(); !s.is_ok()) return fail(s);
  if (Status s = (*role)->start(**engine); !s.is_ok()) return fail(s);
  if ((*role)->role() == disagg::WorkerRole::kPrefill) {
    std::fprintf(stderr, "[serve] role prefill: kv transfer listening on %s:%d (chunk %d tokens)\n",
                 opt.disagg.options.transfer.host.c_str(), (*role)->transfer_port(),
                 engine_options->kv_tiers.chunk_tokens);
  } else if ((*role)->role() == disagg::WorkerRole::kDecode) {
    std::string peers;
    for (const std::string& p : opt.disagg.options.remote.peers) peers += " " + p;
    std::fprintf(stderr, "[serve] role decode: remote prefill %s on%s (chunk %d tokens)\n",
                 opt.disagg.remote_prefill.c_str(), peers.empty() ? " none" : peers.c_str(),
                 engine_options->kv_tiers.chunk_tokens);
    if (!(*role)->transfer_address().empty()) {
      std::fprintf(stderr, "[serve] role decode: kv transfer (migration) listening on %s\n",
                   (*role)->transfer_address().c_str());
    }
  }
  if (!so.chat_template_path.empty()) {
    std::fprintf(stderr, "[serve] chat template: %s (--chat-template)\n",
                 so.chat_template_path.c_str());
  } else if (has_own_template) {
    std::fprintf(stderr, "[serve] chat template: the model's (tokenizer.chat_template)\n");
  } else {
    std::fprintf(stderr,
                 "[serve] the model has no chat template; falling back to ChatML "
                 "(--chat-template FILE sets one)\n");
  }
  if (so.reasoning_parser != server::ReasoningParserKind::kNone) {
    std::fprintf(stderr, "[serve] reasoning parser: %s\n",
                 server::reasoning_parser_name(so.reasoning_parser));
  }
  std::fprintf(stderr,
               "[serve] model %s as \"%s\", max_model_len %lld, listening on http://%s:%d\n",
               path.c_str(), so.served_model_name.c_str(),
               static_cast<long long>((*engine)->max_model_len()), so.host.c_str(), server.port());
  if (engine_options->kv_tiers.enabled()) {
    const KvTierOptions& t = engine_options->kv_tiers;
    std::fprintf(stderr, "[serve] kv tiers: chunk %d tokens, ram %zu bytes, disk %s, remote %s\n",
                 t.chunk_tokens, t.cpu_bytes, t.disk_dir.empty() ? "off" : t.disk_dir.c_str(),
                 t.remote_url.empty() ? "off" : t.remote_url.c_str());
  }
  std::fflush(stderr);

  const int drain_timeout_s = opt.drain_timeout_s;
  std::thread waiter([&server, drain_timeout_s] {
    unsigned char b = 0;
    while (read(g_signal_pipe[0], &b, 1) < 0 && errno == EINTR) {
    }
    const int sig = b;
    if (sig == 0) return;  // the server stopped by itself (a migrating drain)
    std::fprintf(stderr, "[serve] signal %d: draining (up to %d s)\n", sig, drain_timeout_s);
    const int64_t num_aborted = server.drain(std::chrono::seconds(drain_timeout_s));
    if (num_aborted > 0) {
      std::fprintf(stderr, "[serve] drain timeout: aborted %lld requests\n",
                   static_cast<long long>(num_aborted));
    }
    server.stop();
  });
  server.serve();
  // serve() only returns after stop(); the waiter has finished or is about
  // to, or (a drain route stopped the server) waits for this byte.
  {
    const unsigned char zero = 0;
    [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &zero, 1);
  }
  waiter.join();
  (*role)->stop();
  if (*group) (*group)->set_fault_hook(nullptr);
  std::fprintf(stderr, "[serve] stopped\n");
  return 0;
}

}  // namespace strata::cli
