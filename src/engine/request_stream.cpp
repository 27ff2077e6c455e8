#include "engine/request_stream.h"

#include <utility>

namespace strata {

void RequestStream::push(TokenEvent event) {
  std::shared_ptr<const std::function<void()>> listener;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (event.is_final && num_open_choices_ > 0) --num_open_choices_;
    events_.push_back(std::move(event));
    listener = listener_;
  }
  cv_.notify_all();
  if (listener) (*listener)();
}

void RequestStream::set_listener(std::function<void()> listener) {
  auto shared = std::make_shared<const std::function<void()>>(std::move(listener));
  bool is_ready = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    listener_ = shared;
    is_ready = !events_.empty() || num_open_choices_ == 0;
  }
  if (is_ready) (*shared)();
}

std::optional<TokenEvent> RequestStream::take_locked() {
  if (events_.empty()) return std::nullopt;
  TokenEvent e = std::move(events_.front());
  events_.pop_front();
  return e;
}

std::optional<TokenEvent> RequestStream::pop() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !events_.empty() || num_open_choices_ == 0; });
  return take_locked();
}

std::optional<TokenEvent> RequestStream::pop_for(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return !events_.empty() || num_open_choices_ == 0; });
  return take_locked();
}

std::optional<TokenEvent> RequestStream::try_pop() {
  std::lock_guard<std::mutex> lock(mu_);
  return take_locked();
}

std::vector<TokenEvent> RequestStream::drain() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<TokenEvent> out(std::make_move_iterator(events_.begin()),
                              std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool RequestStream::is_done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_open_choices_ == 0 && events_.empty();
}

bool RequestStream::is_closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return num_open_choices_ == 0;
}

void RequestStream::set_resume_state(std::shared_ptr<const ResumeState> state) {
  std::lock_guard<std::mutex> lock(mu_);
  resume_state_ = std::move(state);
}

std::shared_ptr<const ResumeState> RequestStream::resume_state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resume_state_;
}

void RequestStream::set_resumed_text(std::string text) {
  std::lock_guard<std::mutex> lock(mu_);
  resumed_text_ = std::move(text);
}

std::string RequestStream::resumed_text() const {
  std::lock_guard<std::mutex> lock(mu_);
  return resumed_text_;
}

}  // namespace strata
