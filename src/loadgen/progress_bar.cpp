#include "loadgen/progress_bar.h"

#include <string>

namespace strata::loadgen {

ProgressBar::ProgressBar(int64_t total, bool is_enabled, std::FILE* out)
    : total_(total), is_enabled_(is_enabled), out_(out) {
  start_ = last_draw_ = std::chrono::steady_clock::now();
  if (is_enabled_) {
    std::lock_guard<std::mutex> lock(mu_);
    draw_locked(true);
  }
}

void ProgressBar::advance(bool is_failure) {
  if (!is_enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  ++num_done_;
  if (is_failure) ++num_failed_;
  draw_locked(false);
}

void ProgressBar::finish() {
  if (!is_enabled_) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (is_finished_) return;
  draw_locked(true);
  std::fputc('\n', out_);
  std::fflush(out_);
  is_finished_ = true;
}

void ProgressBar::draw_locked(bool force) {
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100) && num_done_ < total_) return;
  last_draw_ = now;
  constexpr int kWidth = 30;
  const int filled =
      total_ > 0 ? static_cast<int>(static_cast<double>(num_done_) / total_ * kWidth) : kWidth;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  const double elapsed_s = std::chrono::duration<double>(now - start_).count();
  std::fprintf(out_, "\r[%s] %lld/%lld requests, %lld failed, %.1f s", bar.c_str(),
               static_cast<long long>(num_done_), static_cast<long long>(total_),
               static_cast<long long>(num_failed_), elapsed_s);
  std::fflush(out_);
}

}  // namespace strata::loadgen
