// ReplicaSet: the router's replicas, their health and the router's own
// counts of what it sent each one.
//
// A replica is named by its base URL ("http://10.0.0.5:8000"). update()
// replaces the list (from --replica flags, or --replicas-file on SIGHUP):
// a replica that stays keeps its state; one that goes is drained - it gets
// no new requests, while those in flight finish (they hold its shared_ptr).
// Health is a CircuitBreaker per replica, fed by request outcomes and the
// active health checks; every ejection and re-admission is logged once.
//
// Thread-safe: the list is guarded by a mutex, each replica's breaker by
// its own, counters are atomic.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "router/circuit_breaker.h"
#include "sched/clock.h"
#include "util/status.h"

namespace strata::router {

struct ReplicaEndpoint {
  std::string url;  // canonical: http://host:port
  std::string host;
  uint16_t port = 0;
};
// "http://host:port", "http://host" (port 80) or "host:port"; no path, no https.
Result<ReplicaEndpoint> parse_replica_url(std::string_view url);

class Replica {
 public:
  Replica(ReplicaEndpoint endpoint, const CircuitBreakerOptions& breaker, const Clock* clock)
      : endpoint_(std::move(endpoint)), breaker_(breaker, clock) {}

  const ReplicaEndpoint& endpoint() const { return endpoint_; }
  const std::string& url() const { return endpoint_.url; }

  // Whether a request may be sent now (closed, or the half-open trial).
  bool is_available();
  // Outcomes of requests and health checks (log a line on a state change).
  void record_success();
  void record_failure(std::string_view why);
  CircuitBreaker::State state() const;
  int64_t num_ejections() const;

  bool is_draining() const { return is_draining_.load(); }
  void set_draining() { is_draining_.store(true); }

  // The router's own view of its traffic here.
  std::atomic<int64_t> num_in_flight{0};
  std::atomic<int64_t> routed_pending_tokens{0};  // sent, no first byte yet
  std::atomic<int64_t> num_routed{0};
  std::atomic<int64_t> num_retries{0};  // requests retried away from here
  std::atomic<int64_t> num_failures{0};
  std::atomic<int64_t> predicted_cached_tokens{0};
  std::atomic<int64_t> actual_cached_tokens{0};

 private:
  ReplicaEndpoint endpoint_;
  mutable std::mutex mu_;  // guards breaker_
  CircuitBreaker breaker_;
  std::atomic<bool> is_draining_{false};
};

class ReplicaSet {
 public:
  ReplicaSet(CircuitBreakerOptions breaker, const Clock* clock)
      : breaker_(breaker), clock_(clock) {}

  // Sets the list. Invalid URLs are an error and change nothing. Returns
  // the URLs added and removed, for the log.
  struct Change {
    std::vector<std::string> added, removed;
  };
  Result<Change> update(const std::vector<std::string>& urls);

  // The current replicas, in list order (not the drained ones).
  std::vector<std::shared_ptr<Replica>> replicas() const;
  std::vector<std::string> urls() const;

 private:
  CircuitBreakerOptions breaker_;
  const Clock* clock_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<Replica>> replicas_;
};

}  // namespace strata::router
