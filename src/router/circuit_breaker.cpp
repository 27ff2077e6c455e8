#include "router/circuit_breaker.h"

#include <algorithm>

namespace strata::router {

bool CircuitBreaker::allows_request() {
  if (state_ == State::kOpen && clock_->now_ns() >= reopen_at_ns_) state_ = State::kHalfOpen;
  return state_ != State::kOpen;
}

bool CircuitBreaker::record_success() {
  consecutive_failures_ = 0;
  if (state_ == State::kClosed) return false;
  state_ = State::kClosed;
  backoff_ms_ = 0;
  return true;
}

bool CircuitBreaker::record_failure() {
  ++consecutive_failures_;
  if (state_ == State::kHalfOpen) return open();
  if (state_ == State::kClosed && consecutive_failures_ >= options_.failure_threshold) {
    return open();
  }
  return false;
}

bool CircuitBreaker::open() {
  backoff_ms_ = backoff_ms_ == 0 ? options_.initial_backoff_ms
                                 : std::min(backoff_ms_ * 2, options_.max_backoff_ms);
  reopen_at_ns_ = clock_->now_ns() + backoff_ms_ * 1'000'000;
  state_ = State::kOpen;
  ++num_ejections_;
  return true;
}

const char* circuit_state_name(CircuitBreaker::State state) {
  switch (state) {
    case CircuitBreaker::State::kClosed:
      return "closed";
    case CircuitBreaker::State::kOpen:
      return "open";
    case CircuitBreaker::State::kHalfOpen:
      return "half-open";
  }
  return "?";
}

}  // namespace strata::router
