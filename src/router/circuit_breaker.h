// CircuitBreaker: whether the router may send a replica requests, from
// passive failure counting and active health checks.
//
//   closed     requests flow; `failure_threshold` consecutive failures (a
//              connect error, a 5xx before any byte, a failed health check)
//              open it.
//   open       ejected: no requests until the backoff elapses (initial,
//              doubling per re-opening up to max).
//   half-open  after the backoff: one trial (a request or the next health
//              check); success closes it and resets the backoff, failure
//              opens it again.
// Time comes from an injected Clock. Not thread-safe: ReplicaSet guards it.
#pragma once

#include <cstdint>

#include "sched/clock.h"

namespace strata::router {

struct CircuitBreakerOptions {
  int32_t failure_threshold = 3;
  int64_t initial_backoff_ms = 1000;
  int64_t max_backoff_ms = 30000;
};

class CircuitBreaker {
 public:
  enum class State { kClosed, kOpen, kHalfOpen };

  CircuitBreaker(const CircuitBreakerOptions& options, const Clock* clock)
      : options_(options), clock_(clock) {}

  // Whether a request may go there now (moves open -> half-open once the
  // backoff elapsed).
  bool allows_request();
  // Returns true when this outcome changed the state to open (an ejection)
  // or to closed from not-closed (a re-admission), for the log.
  bool record_success();
  bool record_failure();
  State state() const { return state_; }
  int64_t num_ejections() const { return num_ejections_; }

 private:
  bool open();

  CircuitBreakerOptions options_;
  const Clock* clock_;
  State state_ = State::kClosed;
  int32_t consecutive_failures_ = 0;
  int64_t backoff_ms_ = 0;
  int64_t reopen_at_ns_ = 0;
  int64_t num_ejections_ = 0;
};

const char* circuit_state_name(CircuitBreaker::State state);

}  // namespace strata::router
