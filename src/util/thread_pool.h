// ThreadPool: a persistent pool of worker threads for data-parallel kernels.
//
// run(fn) calls fn(ith, nth) once for every ith in [0, nth) — the calling
// thread takes ith = 0 — and returns when all calls have returned. Workers
// spin briefly on a generation counter before sleeping, so back-to-back
// kernels pay no futex round-trip. Slots are claimed from a counter: when a
// worker is late (asleep, or descheduled on a busy machine) the caller runs
// its slot instead of waiting, so one ith may run on any thread and one
// thread may run several. run() must not be called concurrently from two
// threads, nor re-entered from inside fn. No allocation per run().
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

class ThreadPool {
 public:
  using Task = std::function<void(int ith, int nth)>;

  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }
  void run(const Task& fn);

 private:
  void worker_loop(int ith);
  void run_claimed_slots();  // runs unclaimed slots of the current run

  int num_threads_;
  std::vector<std::thread> workers_;
  const Task* task_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};    // slots of the current run not yet finished
  std::atomic<int> next_slot_{0};  // next unclaimed ith of the current run
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Splits [0, n) into nth nearly equal contiguous ranges; returns thread ith's.
inline void split_range(int64_t n, int ith, int nth, int64_t* begin, int64_t* end) {
  const int64_t per = (n + nth - 1) / nth;
  *begin = std::min<int64_t>(n, per * ith);
  *end = std::min<int64_t>(n, *begin + per);
}

// split_range over whole tiles of `tile` items: thread ith's share of
// [0, n) starts on a tile boundary (or at n).
inline void split_range_in_tiles(int64_t n, int64_t tile, int ith, int nth, int64_t* begin,
                                 int64_t* end) {
  int64_t tb, te;
  split_range((n + tile - 1) / tile, ith, nth, &tb, &te);
  *begin = std::min<int64_t>(n, tb * tile);
  *end = std::min<int64_t>(n, te * tile);
}

}  // namespace strata
