#include "kvtier/kv_tier_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "kvtier/disk_tier.h"
#include "kvtier/ram_tier.h"
#include "kvtier/redis_tier.h"

namespace strata {
namespace {

int64_t steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// "8 GiB", "512 MiB": a capacity for the start-up log.
std::string capacity_text(size_t bytes) {
  if (bytes >= (size_t{1} << 30) && bytes % (size_t{1} << 30) == 0) {
    return std::to_string(bytes >> 30) + " GiB";
  }
  return std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

Result<std::unique_ptr<KvTierManager>> KvTierManager::create(const KvTierOptions& options,
                                                             size_t max_payload_bytes) {
  std::vector<std::unique_ptr<KvTier>> tiers;
  if (options.cpu_bytes > 0) tiers.push_back(std::make_unique<RamTier>(options.cpu_bytes));
  if (!options.disk_dir.empty()) {
    STRATA_ASSIGN_OR_RETURN(
        std::unique_ptr<DiskTier> disk,
        DiskTier::open(options.disk_dir, options.disk_bytes, max_payload_bytes));
    tiers.push_back(std::move(disk));
  }
  if (!options.remote_url.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RedisTier> redis,
                            RedisTier::connect(options.remote_url, options.remote_password,
                                               options.remote_timeout_ms, max_payload_bytes));
    tiers.push_back(std::move(redis));
  }
  std::vector<std::string> locations;
  for (const std::unique_ptr<KvTier>& t : tiers) {
    if (t->name() == "disk") locations.push_back(options.disk_dir);
    if (t->name() == "redis") locations.push_back(options.remote_url);
    if (t->name() == "ram") locations.push_back(capacity_text(options.cpu_bytes));
  }
  auto manager = std::make_unique<KvTierManager>(std::move(tiers), options.max_pending_store_bytes);
  manager->check_tiers(locations);
  return manager;
}

KvTierManager::KvTierManager(std::vector<std::unique_ptr<KvTier>> tiers,
                             size_t max_pending_store_bytes, KvTierHealthOptions health)
    : tiers_(std::move(tiers)),
      max_pending_store_bytes_(max_pending_store_bytes),
      health_options_(std::move(health)),
      has_memory_tier_(!tiers_.empty() && tiers_[0]->is_memory()),
      health_(tiers_.size()),
      dropped_stores_(tiers_.size(), 0) {
  const bool has_background_tier = tiers_.size() > (has_memory_tier_ ? 1u : 0u);
  if (has_background_tier) writer_ = std::thread([this] { writer_loop(); });
}

KvTierManager::~KvTierManager() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    is_stopping_ = true;
  }
  queue_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

int64_t KvTierManager::now_ms() const {
  return health_options_.now_ms ? health_options_.now_ms() : steady_now_ms();
}

bool KvTierManager::is_tier_available(size_t i) const {
  const int64_t now = now_ms();
  std::lock_guard<std::mutex> lock(health_mu_);
  return now >= health_[i].retry_at_ms;
}

void KvTierManager::log(const std::string& line) const {
  if (health_options_.log) {
    health_options_.log(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

void KvTierManager::check_tiers(const std::vector<std::string>& locations) {
  for (size_t i = 0; i < tiers_.size(); ++i) {
    std::string tier = "[kv] tier " + std::string(tiers_[i]->name());
    if (i < locations.size() && !locations[i].empty()) tier += " (" + locations[i] + ")";
    const Status s = tiers_[i]->ping();
    // An unreachable tier starts down: requests bypass it instead of each
    // waiting for its timeout; the line below is its "down" line.
    record_result(i, s, /*quiet=*/true);
    if (is_tier_fault(s)) {
      log(tier + ": unreachable at start-up (" + s.message() + "); bypassed, retried with backoff");
    } else {
      log(tier + ": reachable");
    }
  }
}

void KvTierManager::record_result(size_t i, const Status& s, bool quiet) {
  std::string line;
  {
    std::lock_guard<std::mutex> lock(health_mu_);
    Health& h = health_[i];
    if (!is_tier_fault(s)) {
      if (h.num_consecutive_faults > 0 && !quiet) {
        line = "[kv] tier " + std::string(tiers_[i]->name()) + ": back up after " +
               std::to_string(h.num_consecutive_faults) + " failed attempt" +
               (h.num_consecutive_faults == 1 ? "" : "s");
      }
      h.num_consecutive_faults = 0;
      h.retry_at_ms = 0;
    } else {
      if (h.num_consecutive_faults == 0 && !quiet) {
        line = "[kv] tier " + std::string(tiers_[i]->name()) + ": down (" + s.message() +
               "); bypassed, retried with backoff";
      }
      mark_fault_locked(h);
    }
  }
  if (!line.empty()) log(line);
}

void KvTierManager::mark_fault_locked(Health& h) {
  // 100 ms, 200 ms, 400 ms, ... capped.
  int64_t backoff_ms = health_options_.initial_backoff_ms;
  for (int64_t n = 0; n < h.num_consecutive_faults && backoff_ms < health_options_.max_backoff_ms;
       ++n) {
    backoff_ms *= 2;
  }
  backoff_ms = std::min(backoff_ms, health_options_.max_backoff_ms);
  ++h.num_consecutive_faults;
  h.retry_at_ms = now_ms() + backoff_ms;
}

TierStats KvTierManager::tier_stats(size_t i) const {
  TierStats s = tiers_[i]->stats();
  std::lock_guard<std::mutex> lock(queue_mu_);
  s.dropped_stores += dropped_stores_[i];
  return s;
}

bool KvTierManager::memory_contains(const ChunkKey& key) {
  return has_memory_tier_ && tiers_[0]->contains(key);
}

void KvTierManager::put_async(KvChunkHandle chunk) {
  if (chunk == nullptr || tiers_.empty()) return;
  if (has_memory_tier_) {
    if (tiers_[0]->contains(chunk->key)) return;  // stored before: every tier has had it
    record_result(0, tiers_[0]->put(chunk));
  }
  if (!writer_.joinable()) return;
  const size_t bytes = chunk->payload.size();
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (pending_bytes_ + bytes > max_pending_store_bytes_ || is_stopping_) {
      for (size_t i = has_memory_tier_ ? 1 : 0; i < tiers_.size(); ++i) {
        dropped_stores_[i] += 1;
      }
      return;
    }
    pending_bytes_ += bytes;
    queue_.push_back(std::move(chunk));
  }
  queue_cv_.notify_one();
}

void KvTierManager::store_in_background_tiers(const KvChunkHandle& chunk) {
  for (size_t i = has_memory_tier_ ? 1 : 0; i < tiers_.size(); ++i) {
    if (!is_tier_available(i)) {
      std::lock_guard<std::mutex> lock(queue_mu_);
      dropped_stores_[i] += 1;
      continue;
    }
    // contains() first: for Redis one small round trip instead of sending a
    // chunk another replica already stored.
    if (tiers_[i]->contains(chunk->key)) continue;
    record_result(i, tiers_[i]->put(chunk));
  }
}

void KvTierManager::writer_loop() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  while (true) {
    queue_cv_.wait(lock, [&] { return is_stopping_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping and drained
    KvChunkHandle chunk = std::move(queue_.front());
    queue_.pop_front();
    is_writing_ = true;
    lock.unlock();
    store_in_background_tiers(chunk);
    lock.lock();
    pending_bytes_ -= chunk->payload.size();
    is_writing_ = false;
    if (queue_.empty()) drained_cv_.notify_all();
  }
  drained_cv_.notify_all();
}

void KvTierManager::flush() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  drained_cv_.wait(lock, [&] { return (queue_.empty() && !is_writing_) || !writer_.joinable(); });
}

KvTierManager::Loaded KvTierManager::get_prefix(std::span<const ChunkKey> keys) {
  Loaded loaded;
  for (const ChunkKey& key : keys) {
    KvChunkHandle found;
    int found_tier = -1;
    for (size_t i = 0; i < tiers_.size() && found == nullptr; ++i) {
      if (!is_tier_available(i)) continue;
      Result<KvChunkHandle> r = tiers_[i]->get(key);
      record_result(i, r.status());
      if (r) {
        found = std::move(*r);
        found_tier = static_cast<int>(i);
      }
    }
    if (found == nullptr) break;
    if (found_tier > 0 && has_memory_tier_) record_result(0, tiers_[0]->put(found));
    loaded.chunks.push_back(std::move(found));
    loaded.tier_index.push_back(found_tier);
  }
  return loaded;
}

}  // namespace strata
