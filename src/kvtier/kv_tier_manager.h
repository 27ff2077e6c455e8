// KvTierManager: the ordered stack of KV tiers (fastest first: RAM, disk,
// Redis) beneath the engine's block pool.
//
// Write path: put_async() never blocks on I/O. It puts the handle into the
// memory tier (if the first tier is one: a map insert) on the caller's thread
// and queues the chunk for one background writer thread, which stores it in
// every other tier that does not hold it yet. The queue is bounded by payload
// bytes (max_pending_store_bytes): a chunk that does not fit is dropped and
// counted (dropped_stores of each background tier), never waited for.
//
// Read path: get_prefix() (blocking; a loader thread, never the engine
// thread) returns the longest run of consecutive chunks found tier by tier;
// a chunk found below the memory tier is promoted into it.
//
// Health: an operation that fails with a fault (is_tier_fault) marks the
// tier down: it is bypassed (reads skip it, stores to it are dropped and
// counted) until a backoff elapses - 100 ms doubling per consecutive fault up
// to 30 s - and then retried; a success resets the backoff. The clock is
// injectable so tests step it. Each change of a tier's state is one log
// line (down with the fault that took it down; back up), never one per
// operation; create() pings every tier and logs whether it is reachable.
//
// Thread-safety: all public methods are thread-safe. Owns its tiers and its
// writer thread; the destructor writes what is queued (to healthy tiers) and
// joins the thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kvtier/kv_tier.h"
#include "kvtier/kv_tier_options.h"

namespace strata {

struct KvTierHealthOptions {
  int64_t initial_backoff_ms = 100;
  int64_t max_backoff_ms = 30'000;
  // Monotonic milliseconds; default: std::chrono::steady_clock.
  std::function<int64_t()> now_ms;
  // Where the health lines go (called without locks held, from the thread
  // whose operation changed the state); default: one line on stderr.
  std::function<void(const std::string&)> log;
};

class KvTierManager {
 public:
  // The tiers `options` configures, in order RAM, disk, Redis. Errors: invalid
  // options, a disk directory that cannot be opened, a malformed Redis URL
  // (an unreachable Redis is not an error: it is retried with backoff).
  static Result<std::unique_ptr<KvTierManager>> create(const KvTierOptions& options,
                                                       size_t max_payload_bytes);

  // Explicit tiers in order (fastest first); for tests and create().
  KvTierManager(std::vector<std::unique_ptr<KvTier>> tiers, size_t max_pending_store_bytes,
                KvTierHealthOptions health = {});
  ~KvTierManager();
  KvTierManager(const KvTierManager&) = delete;
  KvTierManager& operator=(const KvTierManager&) = delete;

  void put_async(KvChunkHandle chunk);

  struct Loaded {
    std::vector<KvChunkHandle> chunks;  // chunks[i] has key keys[i]
    std::vector<int> tier_index;        // where chunks[i] was found
  };
  Loaded get_prefix(std::span<const ChunkKey> keys);

  size_t num_tiers() const { return tiers_.size(); }
  std::string_view tier_name(size_t i) const { return tiers_[i]->name(); }
  TierStats tier_stats(size_t i) const;
  KvTier& tier(size_t i) { return *tiers_[i]; }
  // Not bypassed right now (no fault, or its backoff has elapsed).
  bool is_tier_available(size_t i) const;
  // Whether the memory tier (tier 0, when it is one) holds `key`.
  bool memory_contains(const ChunkKey& key);
  // Waits until every queued store was written (or dropped).
  void flush();
  // Pings every tier once (KvTier::ping) and logs one line per tier:
  // reachable, or unreachable and bypassed from now on (as after a fault).
  // `locations[i]`, when given, says where tier i is ("redis://h:6379").
  void check_tiers(const std::vector<std::string>& locations);

 private:
  struct Health {
    int64_t num_consecutive_faults = 0;
    int64_t retry_at_ms = 0;  // bypassed while now < retry_at_ms
  };

  int64_t now_ms() const;
  // Updates tier i's health from an operation's status; logs when the tier
  // goes down or comes back, unless `quiet`.
  void record_result(size_t i, const Status& s, bool quiet = false);
  void log(const std::string& line) const;
  void mark_fault_locked(Health& h);  // health_mu_ held: one more fault, backoff doubles
  void writer_loop();
  void store_in_background_tiers(const KvChunkHandle& chunk);

  std::vector<std::unique_ptr<KvTier>> tiers_;
  const size_t max_pending_store_bytes_;
  const KvTierHealthOptions health_options_;
  const bool has_memory_tier_;

  mutable std::mutex health_mu_;
  std::vector<Health> health_;

  mutable std::mutex queue_mu_;         // guards the queue and dropped_stores_
  std::condition_variable queue_cv_;    // writer waits for work / stop
  std::condition_variable drained_cv_;  // flush waits for idle
  std::deque<KvChunkHandle> queue_;
  size_t pending_bytes_ = 0;
  std::vector<int64_t> dropped_stores_;  // per tier: stores not attempted
  bool is_writing_ = false;
  bool is_stopping_ = false;
  std::thread writer_;
};

}  // namespace strata
