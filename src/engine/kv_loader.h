// KvLoader: one background thread that fetches chunk runs from the KV tiers
// for requests in the `loading` state, so the engine thread never waits on
// disk or network I/O.
//
// The engine thread submit()s a job (an id and the chunk keys to look up, in
// prefix order) and later collects finished jobs with take_done(), usually at
// the start of a step; `on_done` is called (from the loader thread, without
// any lock held) after each job finishes, so an idle engine loop can wake up.
// cancel() drops a job that has not started; a job already running finishes
// and its result is simply not collected by anyone who forgot it.
//
// Borrows the KvTierManager (it must outlive the loader). Thread-safe. The
// destructor drops queued jobs and joins the thread (waiting for the job in
// progress, which is bounded by the tiers' timeouts).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "kvtier/kv_tier_manager.h"

namespace strata {

class KvLoader {
 public:
  struct Job {
    uint64_t id = 0;
    std::vector<ChunkKey> keys;
  };
  struct Done {
    uint64_t id = 0;
    KvTierManager::Loaded loaded;  // the longest run found, keys[0], keys[1], ...
    double seconds = 0.0;          // wall time of the lookup
  };

  KvLoader(KvTierManager& tiers, std::function<void()> on_done);
  ~KvLoader();
  KvLoader(const KvLoader&) = delete;
  KvLoader& operator=(const KvLoader&) = delete;

  void submit(Job job);
  // Drops job `id` if it has not started.
  void cancel(uint64_t id);
  // Finished jobs since the last call, in completion order. Never blocks on I/O.
  std::vector<Done> take_done();

 private:
  void loop();

  KvTierManager& tiers_;
  std::function<void()> on_done_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::vector<Done> done_;
  bool is_stopping_ = false;
  std::thread thread_;
};

}  // namespace strata
