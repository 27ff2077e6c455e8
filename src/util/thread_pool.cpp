#include "util/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define STRATA_CPU_RELAX() _mm_pause()
#else
#define STRATA_CPU_RELAX() std::this_thread::yield()
#endif

namespace strata {
namespace {

// Pause iterations a worker spins on the generation counter before it
// sleeps on the condition variable (~0.5 ms on Zen3): long enough to cover
// the gap between two kernels of one forward pass, short enough not to burn
// a shared core while the engine is idle.
constexpr int kSpinIterations = 1 << 13;

}  // namespace

ThreadPool::ThreadPool(int num_threads) : num_threads_(std::max(1, num_threads)) {
  workers_.reserve(num_threads_ - 1);
  for (int ith = 1; ith < num_threads_; ++ith) {
    workers_.emplace_back([this, ith] { worker_loop(ith); });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(const Task& fn) {
  if (num_threads_ == 1) {
    fn(0, 1);
    return;
  }
  task_ = &fn;
  pending_.store(num_threads_, std::memory_order_relaxed);
  // Slot 0 is the caller's. The release pairs with the claim in
  // run_claimed_slots(), so whoever claims a slot sees task_.
  next_slot_.store(1, std::memory_order_release);
  {
    // The lock pairs with a worker's predicate check before it sleeps, so a
    // wake-up cannot be lost. It is uncontended on the fast path (workers
    // spinning), and notify_all without waiters makes no system call.
    std::lock_guard<std::mutex> lock(mu_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  fn(0, num_threads_);
  pending_.fetch_sub(1, std::memory_order_acq_rel);
  // Slots no worker has claimed yet run here rather than waiting for a
  // worker that is asleep or descheduled.
  run_claimed_slots();
  // Wait for slots other threads are still running; yield now and then so
  // an oversubscribed machine still makes progress.
  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin % 1024 == 1023) {
      std::this_thread::yield();
    } else {
      STRATA_CPU_RELAX();
    }
  }
  task_ = nullptr;
}

void ThreadPool::run_claimed_slots() {
  for (;;) {
    const int slot = next_slot_.fetch_add(1, std::memory_order_acq_rel);
    // A late worker of a finished run lands here too: the counter is past
    // nth until the next run resets it, so it never touches a stale task_.
    if (slot >= num_threads_) return;
    (*task_)(slot, num_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::worker_loop(int ith) {
  // Generation 0 is the one before any run; a worker that starts late must
  // still see run 1 as new, so it does not read the counter here.
  uint64_t seen = 0;
  for (;;) {
    uint64_t gen = generation_.load(std::memory_order_acquire);
    for (int spin = 0; gen == seen && spin < kSpinIterations; ++spin) {
      STRATA_CPU_RELAX();
      gen = generation_.load(std::memory_order_acquire);
    }
    if (gen == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      gen = generation_.load(std::memory_order_acquire);
    }
    seen = gen;
    if (stop_.load(std::memory_order_acquire)) return;
    run_claimed_slots();
  }
}

}  // namespace strata
