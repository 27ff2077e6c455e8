#include "server/event_pump.h"

#include <utility>

namespace strata::server {

EventPump::EventPump(int num_threads) {
  if (num_threads < 1) num_threads = 1;
  threads_.reserve(static_cast<size_t>(num_threads));
  for (int i = 0; i < num_threads; ++i) threads_.emplace_back([this] { loop(); });
}

EventPump::~EventPump() {
  stop();
}

void EventPump::schedule(std::shared_ptr<Task> task) {
  // Notified under the lock: stop() takes it after us, so the condition
  // variable is never signalled while the pump is being destroyed.
  std::lock_guard<std::mutex> lock(mu_);
  if (is_stopping_) return;
  if (task->is_running_) {
    task->is_scheduled_again_ = true;
    return;
  }
  if (task->is_queued_) return;
  task->is_queued_ = true;
  queue_.push_back(std::move(task));
  cv_.notify_one();
}

void EventPump::stop() {
  std::deque<std::shared_ptr<Task>> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    is_stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(queue_);
  }
  // The dropped tasks are destroyed here, outside the lock.
}

void EventPump::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return is_stopping_ || !queue_.empty(); });
    if (is_stopping_) return;
    std::shared_ptr<Task> task = std::move(queue_.front());
    queue_.pop_front();
    task->is_queued_ = false;
    task->is_running_ = true;
    lock.unlock();
    task->run();
    lock.lock();
    task->is_running_ = false;
    if (task->is_scheduled_again_ && !is_stopping_) {
      task->is_scheduled_again_ = false;
      task->is_queued_ = true;
      queue_.push_back(task);
    }
    // If this was the last reference, the task dies outside the pump's lock.
    lock.unlock();
    task.reset();
    lock.lock();
  }
}

}  // namespace strata::server
