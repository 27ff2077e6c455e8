// Helpers for the tiered-KV-cache engine tests: engines with tiers on the
// peaky test model (chunks of 32 tokens = 2 blocks), cold reference outputs,
// chunk keys of a prompt, temp directories, a gate that holds tier reads, and
// a redis-server child process on a free port.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../kvtier/redis_server.h"
#include "engine/tiered_kv_connector.h"
#include "engine_test_util.h"
#include "kvtier/chunk_io.h"
#include "kvtier/chunk_key.h"
#include "kvtier/kv_tier_manager.h"

extern char** environ;

namespace strata::testing {

inline constexpr int32_t kChunkTokens = 32;
inline constexpr int32_t kPromptTokens = 150;  // 4 whole chunks can come from tiers
inline constexpr int64_t kLoadableTokens = 128;

inline EngineOptions tier_options(int64_t num_blocks = 64) {
  EngineOptions o = small_options(num_blocks);
  o.kv_tiers.chunk_tokens = kChunkTokens;
  return o;
}

inline size_t chunk_payload_bytes() {
  return static_cast<size_t>(kChunkTokens) * kv_bytes_per_token(peaky_model().weights->config());
}

inline std::unique_ptr<EngineCore> make_tier_core(const EngineOptions& options,
                                                  std::unique_ptr<KvTierManager> tiers = nullptr,
                                                  Metrics* metrics = nullptr,
                                                  const TestModel& model = peaky_model()) {
  std::unique_ptr<KvConnector> connector;
  if (tiers != nullptr) {
    Result<std::unique_ptr<TieredKvConnector>> c = TieredKvConnector::create(
        *model.weights, options.block_size, options.kv_tiers, std::move(tiers), metrics, nullptr);
    EXPECT_TRUE(c.is_ok()) << c.status().message();
    if (!c) return nullptr;
    connector = std::move(*c);
  }
  Result<std::unique_ptr<EngineCore>> core = EngineCore::create(
      *model.weights, *model.tokenizer, options, metrics, nullptr, std::move(connector));
  EXPECT_TRUE(core.is_ok()) << core.status().message();
  return core ? std::move(*core) : nullptr;
}

// Runs `requests` together on `core` until all finish; choice 0 of each.
inline std::vector<ChoiceOutput> serve_all(EngineCore& core,
                                           std::vector<GenerationRequest> requests) {
  std::vector<ChoiceOutput> out;
  for (auto& choices : run_to_completion(core, std::move(requests))) out.push_back(choices[0]);
  return out;
}

// The output of `request` on a fresh engine without tiers.
inline std::vector<int32_t> cold_output(const GenerationRequest& request) {
  return solo_output(request);
}

inline GenerationRequest document_request(uint32_t seed) {
  return greedy_request(random_prompt(seed, kPromptTokens), 16);
}
inline GenerationRequest canary_request() {
  return greedy_request(random_prompt(999, 20), 8);
}

// The chunk keys of `prompt`'s first `num_chunks` chunks under `model`.
inline std::vector<ChunkKey> chunk_keys(const TestModel& model, std::span<const int32_t> prompt,
                                        int64_t num_chunks, int32_t block_size = 16) {
  const ModelFingerprint fp = compute_model_fingerprint(
      model.weights->file(), model.weights->config(), block_size, kChunkTokens);
  std::vector<ChunkKey> keys;
  BlockHash h = root_block_hash();
  const int64_t blocks_per_chunk = kChunkTokens / block_size;
  for (int64_t b = 0; b < num_chunks * blocks_per_chunk; ++b) {
    h = hash_block(h, prompt.subspan(b * block_size, block_size));
    if ((b + 1) % blocks_per_chunk == 0) keys.push_back(make_chunk_key(fp, h));
  }
  return keys;
}

// The tier named `name` of core's manager (nullptr if absent).
inline KvTier* find_tier(EngineCore& core, std::string_view name) {
  auto* connector = dynamic_cast<TieredKvConnector*>(core.kv_connector());
  if (connector == nullptr) return nullptr;
  KvTierManager* m = &connector->tiers();
  for (size_t i = 0; i < m->num_tiers(); ++i) {
    if (m->tier_name(i) == name) return &m->tier(i);
  }
  return nullptr;
}

inline TierStats tier_stats(EngineCore& core, std::string_view name) {
  KvTier* t = find_tier(core, name);
  return t ? t->stats() : TierStats{};
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "strata-kvtier-XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path, ec);
  }
  std::string str() const { return path.string(); }
};

// A gate tests close to hold every get() of a GatedTier until opened.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool is_open = true;
  int num_waiting = 0;
  void set(bool open) {
    std::lock_guard<std::mutex> lock(mu);
    is_open = open;
    cv.notify_all();
  }
};

// A tier that forwards to a shared inner tier (so several engines see the
// same store), holding reads while the gate is closed.
class GatedTier final : public KvTier {
 public:
  GatedTier(std::shared_ptr<KvTier> inner, std::shared_ptr<Gate> gate)
      : inner_(std::move(inner)), gate_(std::move(gate)) {}
  std::string_view name() const override { return "gated"; }
  bool contains(const ChunkKey& key) override { return inner_->contains(key); }
  Status put(const KvChunkHandle& chunk) override { return inner_->put(chunk); }
  Result<KvChunkHandle> get(const ChunkKey& key) override {
    {
      std::unique_lock<std::mutex> lock(gate_->mu);
      ++gate_->num_waiting;
      gate_->cv.wait(lock, [&] { return gate_->is_open; });
      --gate_->num_waiting;
    }
    return inner_->get(key);
  }
  Status remove(const ChunkKey& key) override { return inner_->remove(key); }
  TierStats stats() const override { return inner_->stats(); }

 private:
  std::shared_ptr<KvTier> inner_;
  std::shared_ptr<Gate> gate_;
};

inline std::unique_ptr<KvTierManager> manager_of(std::unique_ptr<KvTier> tier) {
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(tier));
  return std::make_unique<KvTierManager>(std::move(tiers), size_t{64} << 20);
}

}  // namespace strata::testing
