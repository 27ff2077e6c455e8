// Clock: where the scheduler reads time. Injected so that the scheduler
// stays pure and tests control time (FakeClock).
//
// SteadyClock reads std::chrono::steady_clock; FakeClock returns what the
// test sets. Both are thread-compatible; a Clock outlives its users.
#pragma once

#include <chrono>
#include <cstdint>

namespace strata {

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic nanoseconds since an arbitrary origin.
  virtual int64_t now_ns() const = 0;
};

class SteadyClock final : public Clock {
 public:
  int64_t now_ns() const override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t start_ns = 0) : now_ns_(start_ns) {}
  int64_t now_ns() const override { return now_ns_; }
  void set_ns(int64_t t) { now_ns_ = t; }
  void advance_ns(int64_t dt) { now_ns_ += dt; }

 private:
  int64_t now_ns_;
};

}  // namespace strata
