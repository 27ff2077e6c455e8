// Helpers for the kvtier tests: deterministic chunks, temp directories, an
// in-memory fake tier with fault knobs, and a redis-server child process on a
// free port.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kvtier/chunk_key.h"
#include "kvtier/kv_chunk.h"
#include "kvtier/kv_tier.h"
#include "redis_server.h"

namespace strata::testing {

// A chunk whose key and payload are functions of `seed`.
inline KvChunkHandle make_test_chunk(uint32_t seed, size_t payload_bytes,
                                     const ModelFingerprint& fp = {}) {
  const int32_t tokens[2] = {static_cast<int32_t>(seed), 7};
  auto c = std::make_shared<KvChunk>();
  c->key = make_chunk_key(fp, hash_block(root_block_hash(), tokens));
  c->num_tokens = 32;
  c->payload.resize(payload_bytes);
  uint32_t x = seed * 2654435761u + 1;
  for (uint8_t& b : c->payload) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x);
  }
  return c;
}

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "strata-kvtier-XXXXXX").string();
    path_ = ::mkdtemp(templ.data()) != nullptr ? templ : std::string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// An unbounded in-memory tier (tests only) with knobs to fail or block.
class FakeTier final : public KvTier {
 public:
  explicit FakeTier(std::string name = "fake") : name_(std::move(name)) {}

  std::string_view name() const override { return name_; }
  bool contains(const ChunkKey& key) override {
    if (is_failing) return false;
    std::lock_guard<std::mutex> lock(mu_);
    return map_.count(key) != 0;
  }
  Status put(const KvChunkHandle& chunk) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++num_put_calls_;
      put_cv_.notify_all();
      gate_cv_.wait(lock, [&] { return !is_put_blocked_; });
    }
    if (is_failing) {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.errors;
      return io_error("fake tier: injected fault");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.emplace(chunk->key, chunk).second) {
      stats_.bytes_written += static_cast<int64_t>(chunk->payload.size());
      stats_.stored_bytes += static_cast<int64_t>(chunk->payload.size());
      stats_.stored_chunks += 1;
    }
    return Status::ok();
  }
  Result<KvChunkHandle> get(const ChunkKey& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++num_get_calls_;
    if (is_failing) {
      ++stats_.errors;
      return io_error("fake tier: injected fault");
    }
    auto it = map_.find(key);
    if (it == map_.end()) {
      ++stats_.misses;
      return not_found("fake tier: miss");
    }
    ++stats_.hits;
    stats_.bytes_read += static_cast<int64_t>(it->second->payload.size());
    return it->second;
  }
  Status remove(const ChunkKey& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      stats_.stored_bytes -= static_cast<int64_t>(it->second->payload.size());
      stats_.stored_chunks -= 1;
      map_.erase(it);
    }
    return Status::ok();
  }
  TierStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_;
  }

  // Knobs.
  std::atomic<bool> is_failing{false};
  void block_puts() {
    std::lock_guard<std::mutex> lock(mu_);
    is_put_blocked_ = true;
  }
  void unblock_puts() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      is_put_blocked_ = false;
    }
    gate_cv_.notify_all();
  }
  // Waits until put() has been entered `n` times in total.
  void wait_for_put_calls(int64_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    put_cv_.wait(lock, [&] { return num_put_calls_ >= n; });
  }
  int64_t num_get_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return num_get_calls_;
  }
  int64_t num_put_calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return num_put_calls_;
  }

 private:
  const std::string name_;
  mutable std::mutex mu_;
  std::condition_variable gate_cv_;
  std::condition_variable put_cv_;
  bool is_put_blocked_ = false;
  int64_t num_put_calls_ = 0;
  int64_t num_get_calls_ = 0;
  std::unordered_map<ChunkKey, KvChunkHandle, ChunkKeyHash> map_;
  TierStats stats_;
};

}  // namespace strata::testing
