#include "engine/kv_loader.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace strata {

KvLoader::KvLoader(KvTierManager& tiers, std::function<void()> on_done)
    : tiers_(tiers), on_done_(std::move(on_done)) {
  thread_ = std::thread([this] { loop(); });
}

KvLoader::~KvLoader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    is_stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void KvLoader::submit(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(job));
  }
  cv_.notify_all();
}

void KvLoader::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(queue_, [id](const Job& j) { return j.id == id; });
}

std::vector<KvLoader::Done> KvLoader::take_done() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Done> out;
  out.swap(done_);
  return out;
}

void KvLoader::loop() {
  while (true) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return is_stopping_ || !queue_.empty(); });
      if (is_stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
    }
    const auto t0 = std::chrono::steady_clock::now();
    Done done;
    done.id = job.id;
    done.loaded = tiers_.get_prefix(job.keys);
    done.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_.push_back(std::move(done));
    }
    if (on_done_) on_done_();
  }
}

}  // namespace strata
