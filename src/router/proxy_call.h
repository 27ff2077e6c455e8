// ProxyCall: one client request forwarded to replicas, best first, until
// one serves it.
//
// Retry before the first byte, never after: the client sees nothing of a
// try until the replica's first whole SSE event (streams) or its whole
// response (otherwise), so a try that fails before then - connect error,
// reset, timeout, a 5xx or 429 status - is retried on the next replica of
// the order (at most max_attempts tries, skipping replicas ejected since
// the order was made), and the client never sees duplicated work. After the
// first event is out, a failure ends the stream with an error event and
// `data: [DONE]`. When every try failed, the client gets the last replica's
// error response (a 429 stays a 429), or 502 when none answered.
//
// A try on a replica the health checks just ejected is abandoned the same
// way as a failure (abandon_try_on), so a link that went silent costs a
// health-check period, not a response timeout.
//
// A client disconnect cancels the replica call at once (its connection is
// closed, so the replica aborts the request); nothing is retried then.
//
// Outcomes feed each replica's circuit breaker (connect errors, resets and
// 5xx are failures; 429 is not) and the router's counters; for generation
// requests the replica's usage.prompt_tokens_details.cached_tokens is added
// to its actual cached tokens next to the router's prediction.
//
// Migration (docs/disagg.md "Migration"): a worker being drained ends a
// request it cannot finish with a migration record (a last SSE event
// `event: strata.migrate`, or a body {"strata_migrate": ...}) instead of
// its finish. The record is not forwarded: the call re-sends the client's
// body plus "strata_resume" (the record) to the next worker of its order
// other than that one, and splices that worker's continuation into the
// client's stream (or sends its whole response). A continuation that fails
// before its first event moves on as a first try would.
//
// Lifetime: start() returns at once; the call keeps itself alive through
// its client callbacks until the last try completed. Thread-safe: upstream
// callbacks run on the client's I/O thread, the disconnect callback on the
// server's.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "http/http_client.h"
#include "http/http_response.h"
#include "http/router.h"
#include "router/replica_set.h"
#include "router/router_metrics.h"

namespace strata::router {

struct ProxyTarget {
  std::shared_ptr<Replica> replica;
  // Prompt tokens the router expects this replica to hold (cache-aware
  // routing); nullopt = no prediction.
  std::optional<int64_t> predicted_cached_tokens;
};

struct ProxyRequest {
  std::string method = "POST";
  std::string target;  // origin-form, as the client sent it
  std::string body;
  http::HeaderList headers;  // to send upstream (auth already replaced)
  int64_t num_prompt_tokens = 0;
  bool is_generation = false;  // read usage, count in RouterMetrics
};

struct ProxyOptions {
  int max_attempts = 3;  // 1 + --max-retries
};

class ProxyCall : public std::enable_shared_from_this<ProxyCall> {
 public:
  static std::shared_ptr<ProxyCall> start(http::HttpClient* client, ProxyRequest request,
                                          std::vector<ProxyTarget> order, ProxyOptions options,
                                          http::ResponsePtr response, RouterMetrics* metrics);

  // The replica of the try in progress (null between tries and after the
  // last). Thread-safe.
  std::shared_ptr<Replica> current_replica();
  // Gives up the try in progress on `replica` (it was just ejected: a
  // silent link would otherwise hold the request until the response
  // timeout). Before the first byte the request moves to the next replica;
  // after it, the stream ends with the error event. Thread-safe.
  void abandon_try_on(const Replica* replica);

  // Use start(); public for make_shared.
  ProxyCall(http::HttpClient* client, ProxyRequest request, std::vector<ProxyTarget> order,
            ProxyOptions options, http::ResponsePtr response, RouterMetrics* metrics);

 private:
  struct Attempt;
  void try_next();
  void on_head(const std::shared_ptr<Attempt>& a, const http::ClientResponseHead& head);
  bool on_data(const std::shared_ptr<Attempt>& a, std::string_view data);
  void on_complete(const std::shared_ptr<Attempt>& a, const http::ClientOutcome& outcome);
  void cancel_from_client();
  void end_pending(Attempt& a);
  void read_usage(Attempt& a, std::string_view json_text);
  void fail_all(int status, std::string message);
  // A migration record from `a`: continue on another worker.
  void migrate(const std::shared_ptr<Attempt>& a, nlohmann::json record);
  // Whether a failure of `a` may still move on to the next replica.
  bool can_retry(const Attempt& a) const;

  http::HttpClient* client_;
  ProxyRequest request_;
  std::vector<ProxyTarget> order_;
  ProxyOptions options_;
  http::ResponsePtr response_;
  RouterMetrics* metrics_;

  size_t next_target_ = 0;
  int num_attempts_ = 0;
  bool is_client_started_ = false;  // first byte sent to the client
  int num_migrations_ = 0;
  // The last try's error response, sent when no try is left.
  std::optional<http::HttpReply> last_error_;
  std::string last_failure_;

  std::mutex mu_;  // guards current_ and is_cancelled_
  std::shared_ptr<http::ClientCall> current_;
  std::shared_ptr<Replica> current_replica_;
  uint64_t attempt_seq_ = 0;
  uint64_t abandoned_seq_ = 0;  // the try abandon_try_on() cancelled
  bool is_cancelled_ = false;
};

}  // namespace strata::router
