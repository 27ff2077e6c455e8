// Faults beneath the engine's tiered KV cache. Each test breaks a tier (full
// disk, read-only directory, a flipped bit, a truncated chunk, a chunk of
// another model under the right name, Redis down / killed / brought back /
// slowed) and checks that the faulted request's output is byte-identical to
// a cold run while a canary request is served by the same engine.
#include <gtest/gtest.h>

#include <fstream>

#include "kv_tier_test_util.h"
#include "kvtier/disk_tier.h"

namespace strata::testing {
namespace {

EngineOptions disk_options(const TempDir& dir) {
  EngineOptions o = tier_options();
  o.kv_tiers.disk_dir = dir.str();
  return o;
}

// Serves `p` once on an engine over `dir`, so its chunks are on disk.
void populate(const TempDir& dir, const GenerationRequest& p,
              const TestModel& model = peaky_model()) {
  auto core = make_tier_core(disk_options(dir), nullptr, nullptr, model);
  ASSERT_TRUE(core);
  serve_all(*core, {p});
  core->flush_kv_connector();
}

// The faulted request and a canary on one engine: both equal their cold
// outputs. Returns the faulted request's cached prompt tokens.
int64_t expect_cold_outputs_with_canary(EngineCore& core, const GenerationRequest& p) {
  const auto out = serve_all(core, {p, canary_request()});
  EXPECT_EQ(out[0].tokens, cold_output(p));
  EXPECT_EQ(out[0].finish_reason, FinishReason::kLength);
  EXPECT_EQ(out[1].tokens, cold_output(canary_request()));
  return out[0].usage.num_cached_prompt_tokens;
}

std::string chunk_path(const TempDir& dir, const ChunkKey& key) {
  return (dir.path / key.hex().substr(0, 2) / key.hex()).string();
}

TEST(KvTierFault, BitFlipInAChunkFileLoadsOnlyTheChunksBeforeIt) {
  STRATA_REQUIRE_MODEL();
  TempDir dir;
  const GenerationRequest p = document_request(11);
  populate(dir, p);
  const std::vector<ChunkKey> keys = chunk_keys(peaky_model(), p.prompt_tokens, 4);
  {
    std::fstream f(chunk_path(dir, keys[1]), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.is_open());
    f.seekg(80 + 1000);
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x10);
    f.seekp(80 + 1000);
    f.write(&c, 1);
  }
  auto core = make_tier_core(disk_options(dir));
  ASSERT_TRUE(core);
  EXPECT_EQ(expect_cold_outputs_with_canary(*core, p), kChunkTokens);
  EXPECT_GE(tier_stats(*core, "disk").errors, 1);
}

TEST(KvTierFault, TruncatedChunkFileIsAMiss) {
  STRATA_REQUIRE_MODEL();
  TempDir dir;
  const GenerationRequest p = document_request(12);
  populate(dir, p);
  const std::vector<ChunkKey> keys = chunk_keys(peaky_model(), p.prompt_tokens, 4);
  std::filesystem::resize_file(chunk_path(dir, keys[2]), 80 + chunk_payload_bytes() / 2);
  auto core = make_tier_core(disk_options(dir));
  ASSERT_TRUE(core);
  EXPECT_EQ(expect_cold_outputs_with_canary(*core, p), 2 * kChunkTokens);
}

TEST(KvTierFault, ChunkOfAnotherModelUnderTheRightNameIsNeverLoaded) {
  STRATA_REQUIRE_MODEL();
  TestModel other;
  {
    Result<ModelWeights> w =
        ModelWeights::open(std::string(STRATA_BINARY_DIR) + "/models/llama-f32.gguf");
    ASSERT_TRUE(w.is_ok()) << w.status().message();
    other.weights = std::make_unique<ModelWeights>(std::move(*w));
    Result<std::unique_ptr<Tokenizer>> t = Tokenizer::from_gguf(other.weights->file());
    ASSERT_TRUE(t.is_ok());
    other.tokenizer = std::move(*t);
  }
  ASSERT_EQ(other.weights->config().kv_dim(), peaky_model().weights->config().kv_dim());
  const GenerationRequest p = document_request(13);
  TempDir ours;
  TempDir theirs;
  populate(ours, p);
  populate(theirs, p, other);
  const std::vector<ChunkKey> our_keys = chunk_keys(peaky_model(), p.prompt_tokens, 4);
  const std::vector<ChunkKey> their_keys = chunk_keys(other, p.prompt_tokens, 4);
  ASSERT_NE(our_keys[0], their_keys[0]);  // the fingerprint separates the models
  std::filesystem::copy_file(chunk_path(theirs, their_keys[0]), chunk_path(ours, our_keys[0]),
                             std::filesystem::copy_options::overwrite_existing);
  auto core = make_tier_core(disk_options(ours));
  ASSERT_TRUE(core);
  EXPECT_EQ(expect_cold_outputs_with_canary(*core, p), 0);
}

TEST(KvTierFault, FullDiskDropsStoresAndLeavesNothingBehind) {
  STRATA_REQUIRE_MODEL();
  TempDir dir;
  const GenerationRequest p = document_request(14);
  {
    auto core = make_tier_core(disk_options(dir));
    ASSERT_TRUE(core);
    auto* disk = dynamic_cast<DiskTier*>(find_tier(*core, "disk"));
    ASSERT_NE(disk, nullptr);
    disk->inject_fault_for_testing(DiskFault{ENOSPC, 1000, true});
    EXPECT_EQ(expect_cold_outputs_with_canary(*core, p), 0);
    core->flush_kv_connector();
    const TierStats s = tier_stats(*core, "disk");
    EXPECT_GE(s.errors + s.dropped_stores, 1);
    EXPECT_EQ(s.stored_chunks, 0);
  }
  auto core = make_tier_core(disk_options(dir));
  ASSERT_TRUE(core);
  EXPECT_EQ(expect_cold_outputs_with_canary(*core, p), 0);
}

TEST(KvTierFault, ReadOnlyCacheDirectoryServesColdOutputs) {
  STRATA_REQUIRE_MODEL();
  TempDir dir;
  const GenerationRequest p = document_request(15);
  auto core = make_tier_core(disk_options(dir));
  ASSERT_TRUE(core);
  std::filesystem::permissions(
      dir.path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  // root ignores permission bits: then the seam makes the writes fail as a
  // read-only directory would (EACCES).
  const bool is_writable = ::access(dir.str().c_str(), W_OK) == 0;
  if (is_writable) {
    dynamic_cast<DiskTier&>(*find_tier(*core, "disk"))
        .inject_fault_for_testing(DiskFault{EACCES, 1000, false});
  }
  EXPECT_EQ(expect_cold_outputs_with_canary(*core, p), 0);
  core->flush_kv_connector();
  EXPECT_EQ(tier_stats(*core, "disk").stored_chunks, 0);
  EXPECT_EQ(expect_cold_outputs_with_canary(*core, p), p.prompt_tokens.size() / 16 * 16);
}

// --- Redis ---------------------------------------------------------------

EngineOptions redis_options(const std::string& url) {
  EngineOptions o = tier_options();
  o.kv_tiers.remote_url = url;
  o.kv_tiers.remote_timeout_ms = 200;
  return o;
}

// Serves fresh prompts on `core` until one reaches Redis whole (the tier was
// bypassed and comes back after its backoff); returns that prompt. A prompt
// whose first chunks were dropped while the tier was still bypassed and
// whose later ones were stored does not count: nothing of it loads.
std::optional<GenerationRequest> serve_until_stored(EngineCore& core, uint32_t seed) {
  for (int i = 0; i < 100; ++i) {
    GenerationRequest p = document_request(seed + static_cast<uint32_t>(i));
    // Every full chunk of the KV it computes: the prompt and all outputs
    // but the last sampled one.
    const int64_t num_computed = std::ssize(p.prompt_tokens) + p.max_tokens - 1;
    const int64_t whole = num_computed / kChunkTokens * static_cast<int64_t>(chunk_payload_bytes());
    const int64_t before = tier_stats(core, "redis").bytes_written;
    serve_all(core, {p});
    core.flush_kv_connector();
    if (tier_stats(core, "redis").bytes_written - before == whole) return p;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return std::nullopt;
}

TEST(KvTierFault, RedisDownAtStartThenBroughtUpRecovers) {
  STRATA_REQUIRE_MODEL();
  if (!RedisServer::is_available()) GTEST_SKIP() << "redis-server not installed";
  RedisServer redis;
  auto core = make_tier_core(redis_options(redis.url()));  // nothing listens yet
  ASSERT_TRUE(core);
  EXPECT_EQ(expect_cold_outputs_with_canary(*core, document_request(21)), 0);
  core->flush_kv_connector();
  EXPECT_GE(tier_stats(*core, "redis").errors + tier_stats(*core, "redis").dropped_stores, 1);
  ASSERT_TRUE(redis.start());
  const std::optional<GenerationRequest> stored = serve_until_stored(*core, 100);
  ASSERT_TRUE(stored.has_value()) << "the Redis tier never recovered";
  auto replica = make_tier_core(redis_options(redis.url()));
  ASSERT_TRUE(replica);
  EXPECT_EQ(expect_cold_outputs_with_canary(*replica, *stored), kLoadableTokens);
}

TEST(KvTierFault, RedisKilledMidRunThenBroughtBack) {
  STRATA_REQUIRE_MODEL();
  if (!RedisServer::is_available()) GTEST_SKIP() << "redis-server not installed";
  RedisServer redis;
  ASSERT_TRUE(redis.start());
  const GenerationRequest p = document_request(31);
  auto core = make_tier_core(redis_options(redis.url()));
  ASSERT_TRUE(core);
  serve_all(*core, {p});
  core->flush_kv_connector();
  ASSERT_GT(tier_stats(*core, "redis").bytes_written, 0);
  redis.stop();
  auto reader = make_tier_core(redis_options(redis.url()));
  ASSERT_TRUE(reader);
  EXPECT_EQ(expect_cold_outputs_with_canary(*reader, p), 0);
  EXPECT_GE(tier_stats(*reader, "redis").errors, 1);
  ASSERT_TRUE(redis.start());  // back, empty
  const std::optional<GenerationRequest> stored = serve_until_stored(*reader, 200);
  ASSERT_TRUE(stored.has_value()) << "the Redis tier never recovered";
  auto replica = make_tier_core(redis_options(redis.url()));
  ASSERT_TRUE(replica);
  EXPECT_EQ(expect_cold_outputs_with_canary(*replica, *stored), kLoadableTokens);
}

TEST(KvTierFault, SlowRedisTimesOutAndTheRequestIsComputed) {
  STRATA_REQUIRE_MODEL();
  if (!RedisServer::is_available()) GTEST_SKIP() << "redis-server not installed";
  RedisServer redis;
  ASSERT_TRUE(redis.start());
  const GenerationRequest p = document_request(41);
  {
    auto core = make_tier_core(redis_options(redis.url()));
    ASSERT_TRUE(core);
    serve_all(*core, {p});
  }
  // DEBUG SLEEP blocks the whole server for 5 s, far past the 200 ms
  // timeout; it returns once the server no longer answers.
  ASSERT_TRUE(redis.begin_debug_sleep(5));
  auto core = make_tier_core(redis_options(redis.url()));
  ASSERT_TRUE(core);
  EXPECT_EQ(expect_cold_outputs_with_canary(*core, p), 0);
  EXPECT_GE(tier_stats(*core, "redis").errors, 1);
  core.reset();
  redis.stop();  // ends the sleeper's connection
}

}  // namespace
}  // namespace strata::testing
