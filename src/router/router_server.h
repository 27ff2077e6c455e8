// RouterServer: strata router's OpenAI-compatible front for N `strata
// serve` replicas (docs/router.md).
//
// Per generation request (/v1/completions, /v1/chat/completions), on a
// worker thread: parse and tokenize it exactly as a replica would
// (server/prompt_builder.h), compute the chained block hashes of its full
// blocks (kv/block_hash.h), probe the candidate replicas in parallel
// (POST /strata/v1/probe, server/probe_route.h) and wait at most
// probe_timeout for their answers, rank them with RoutePolicy (a replica
// that did not answer in time is scored by load alone), then hand the
// request to a ProxyCall that forwards the client's body unchanged, best
// first, retrying before the first byte (proxy_call.h). The router holds no
// KV and no guessed cache state: every decision comes from the probes of
// that moment, so a restarted router routes exactly at once.
//
// Other routes: /tokenize and /detokenize are forwarded to the least busy
// replica; GET /v1/models[/{id}] is the union of the replicas' lists;
// /health (200 while a replica is available, 503 otherwise) and /metrics
// (router_metrics.h) are the router's own. With api_key set every route but
// /health needs "Authorization: Bearer <api_key>"; replicas get
// replica_api_key (or, without one and without api_key, the client's own
// Authorization header).
//
// Health: a thread GETs every replica's /health each health_interval; with
// the request outcomes it feeds each replica's circuit breaker. Ejections
// and re-admissions are logged (replica_set.h).
//
// Lifecycle: create(), start(), set_replicas() any time (SIGHUP), stop().
// Borrows the Tokenizer (it must outlive the server). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "router/circuit_breaker.h"
#include "router/route_policy.h"
#include "router/router_metrics.h"
#include "router/ttft_estimate.h"
#include "server/chat_template.h"
#include "server/protocol.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace strata::router {

struct RouterOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;               // 0 = any free port (RouterServer::port())
  std::vector<std::string> replicas;  // base URLs
  Policy policy = Policy::kCacheAware;
  std::string api_key;          // required from clients; empty = none
  std::string replica_api_key;  // sent to replicas; empty = see above
  // How long a request waits for the replicas' probe answers.
  std::chrono::milliseconds probe_timeout{50};
  // Probe at most this many candidates (the request's session's last
  // replica, then the least busy by the router's own in-flight count); the
  // rest are scored by load alone. 0 = all.
  size_t max_probe_candidates = 0;
  // Tries after the first, on the next-best replicas, before the first byte.
  int max_retries = 2;
  std::chrono::milliseconds connect_timeout{2000};
  // 0 = no active health checks (request outcomes alone move breakers).
  std::chrono::milliseconds health_interval{1000};
  std::chrono::milliseconds health_timeout{1000};
  // The block size hashes are computed with until a replica's probe answer
  // names its own (then that one, per replica).
  int32_t block_size = 16;
  int num_io_threads = 2;
  // Workers run tokenizing and wait for probes (at most probe_timeout).
  int num_worker_threads = 8;
  uint64_t max_body_bytes = uint64_t{4} << 20;
  CircuitBreakerOptions breaker;
  CostModel cost;
  // vocab_size is filled from the tokenizer; max_model_len and the count
  // limits (max_n, max_stop, ...) are raised so that the replicas, which
  // know their own, decide.
  server::ProtocolLimits limits;
  // The chat template prompts are built with (as the replicas' --chat-template);
  // null: the model's own, or ChatML.
  std::shared_ptr<const server::ChatTemplate> chat_template;
};

// Replica URLs from a --replicas-file: one per line; blank lines and lines
// starting with '#' are skipped; surrounding whitespace is trimmed.
Result<std::vector<std::string>> read_replicas_file(const std::string& path);

class RouterServer {
 public:
  static Result<std::unique_ptr<RouterServer>> create(const Tokenizer& tokenizer,
                                                      RouterOptions options);
  ~RouterServer();
  RouterServer(const RouterServer&) = delete;
  RouterServer& operator=(const RouterServer&) = delete;

  // Binds, starts serving and the health checks.
  Status start();
  uint16_t port() const;
  // Replaces the replica list (replica_set.h: kept replicas keep their
  // state, removed ones drain). Logs what changed.
  Status set_replicas(const std::vector<std::string>& urls);
  std::vector<std::string> replica_urls() const;
  // Drain, then close everything. Idempotent.
  void stop();

  const RouterMetrics& metrics() const;
  std::string metrics_text() const;

 private:
  class Impl;
  explicit RouterServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::router
