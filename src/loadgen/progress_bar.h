// ProgressBar: a one-line progress bar on a FILE* (stderr), redrawn with \r
// at most every 100 ms: "[#####.....] 12/100 requests, 1 failed, 3.2 s".
// Disabled bars print nothing. Thread-safe: advance() may be called from
// every worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>

namespace strata::loadgen {

class ProgressBar {
 public:
  ProgressBar(int64_t total, bool is_enabled, std::FILE* out = stderr);
  void advance(bool is_failure);
  // Draws the final state and ends the line.
  void finish();

 private:
  void draw_locked(bool force);

  std::mutex mu_;
  const int64_t total_;
  const bool is_enabled_;
  std::FILE* out_;
  int64_t num_done_ = 0;
  int64_t num_failed_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool is_finished_ = false;
};

}  // namespace strata::loadgen
