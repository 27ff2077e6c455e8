// KvTierManager: ordering, promotion, the bounded store queue, and health
// (bypass, backoff, recovery) with fake tiers and a stepped clock.
#include "kvtier/kv_tier_manager.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "kvtier/disk_tier.h"
#include "kvtier/ram_tier.h"
#include "kvtier/redis_tier.h"
#include "kvtier_test_util.h"
#include "redis_server.h"

namespace strata {
namespace {

using testing::FakeTier;
using testing::make_test_chunk;
using testing::TempDir;

constexpr size_t kBytes = 1000;

// A manually stepped clock for the backoff tests.
struct StepClock {
  std::shared_ptr<std::atomic<int64_t>> ms = std::make_shared<std::atomic<int64_t>>(1'000'000);
  KvTierHealthOptions options() const {
    KvTierHealthOptions o;
    o.now_ms = [ms = ms] { return ms->load(); };
    return o;
  }
  void advance(int64_t d) { *ms += d; }
};

std::vector<ChunkKey> keys_of(const std::vector<KvChunkHandle>& chunks) {
  std::vector<ChunkKey> keys;
  for (const KvChunkHandle& c : chunks) keys.push_back(c->key);
  return keys;
}

TEST(KvTierManagerTest, FindsChunksTierByTierAndPromotesToRam) {
  auto ram = std::make_unique<RamTier>(100 * kBytes);
  auto a = std::make_unique<FakeTier>("a");
  auto b = std::make_unique<FakeTier>("b");
  FakeTier* fa = a.get();
  FakeTier* fb = b.get();
  std::vector<KvChunkHandle> c;
  for (uint32_t i = 0; i < 3; ++i) c.push_back(make_test_chunk(i, kBytes));
  ASSERT_TRUE(fa->put(c[0]).is_ok());
  ASSERT_TRUE(fb->put(c[1]).is_ok());
  ASSERT_TRUE(fa->put(c[2]).is_ok());
  ASSERT_TRUE(fb->put(c[2]).is_ok());
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(ram));
  tiers.push_back(std::move(a));
  tiers.push_back(std::move(b));
  KvTierManager m(std::move(tiers), 1 << 20);
  ASSERT_EQ(m.num_tiers(), 3u);
  EXPECT_EQ(m.tier_name(0), "ram");

  const std::vector<ChunkKey> keys = keys_of(c);
  KvTierManager::Loaded first = m.get_prefix(keys);
  ASSERT_EQ(first.chunks.size(), 3u);
  EXPECT_EQ(first.tier_index, (std::vector<int>{1, 2, 1}));  // fastest tier that has it
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(first.chunks[i]->payload, c[i]->payload);
  EXPECT_EQ(fb->stats().hits, 1);  // c[2] came from a, b was never asked
  // Promoted: the second lookup is served by RAM alone.
  const int64_t a_gets = fa->num_get_calls();
  KvTierManager::Loaded second = m.get_prefix(keys);
  EXPECT_EQ(second.tier_index, (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(fa->num_get_calls(), a_gets);
  EXPECT_EQ(m.tier_stats(0).hits, 3);
}

TEST(KvTierManagerTest, PrefixStopsAtTheFirstMissingChunk) {
  auto a = std::make_unique<FakeTier>();
  FakeTier* fa = a.get();
  std::vector<KvChunkHandle> c;
  for (uint32_t i = 0; i < 4; ++i) c.push_back(make_test_chunk(i, kBytes));
  for (uint32_t i : {0u, 1u, 3u}) ASSERT_TRUE(fa->put(c[i]).is_ok());
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(a));
  KvTierManager m(std::move(tiers), 1 << 20);
  KvTierManager::Loaded loaded = m.get_prefix(keys_of(c));
  EXPECT_EQ(loaded.chunks.size(), 2u);
  EXPECT_EQ(fa->num_get_calls(), 3);  // c[3] is never asked for
  EXPECT_TRUE(m.get_prefix({}).chunks.empty());
}

TEST(KvTierManagerTest, PutAsyncWritesRamAtOnceAndTheRestInTheBackground) {
  auto ram = std::make_unique<RamTier>(100 * kBytes);
  auto a = std::make_unique<FakeTier>();
  FakeTier* fa = a.get();
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(ram));
  tiers.push_back(std::move(a));
  KvTierManager m(std::move(tiers), 1 << 20);
  KvChunkHandle c = make_test_chunk(1, kBytes);
  fa->block_puts();
  m.put_async(c);
  EXPECT_TRUE(m.memory_contains(c->key));  // synchronous
  EXPECT_TRUE(m.tier(0).contains(c->key));
  fa->unblock_puts();
  m.flush();
  EXPECT_TRUE(fa->contains(c->key));
  // Already in RAM: nothing is queued again.
  m.put_async(c);
  m.flush();
  EXPECT_EQ(fa->num_put_calls(), 1);
  EXPECT_EQ(m.tier_stats(1).bytes_written, static_cast<int64_t>(kBytes));
}

TEST(KvTierManagerTest, BackgroundWriterSkipsKeysATierAlreadyHolds) {
  auto a = std::make_unique<FakeTier>();
  FakeTier* fa = a.get();
  KvChunkHandle c = make_test_chunk(1, kBytes);
  ASSERT_TRUE(fa->put(c).is_ok());  // stored by another replica
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(a));
  KvTierManager m(std::move(tiers), 1 << 20);
  m.put_async(c);
  m.flush();
  EXPECT_EQ(fa->num_put_calls(), 1);
}

TEST(KvTierManagerTest, PutAsyncNeverBlocksOnAStuckTier) {
  auto ram = std::make_unique<RamTier>(1000 * kBytes);
  auto stuck = std::make_unique<FakeTier>("stuck");
  FakeTier* fs = stuck.get();
  fs->block_puts();  // every put blocks until released
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(ram));
  tiers.push_back(std::move(stuck));
  auto m = std::make_unique<KvTierManager>(std::move(tiers), 5 * kBytes);
  // If put_async waited for the writer, this loop would never finish.
  for (uint32_t i = 0; i < 50; ++i) m->put_async(make_test_chunk(i, kBytes));
  fs->wait_for_put_calls(1);
  for (uint32_t i = 0; i < 50; ++i)
    EXPECT_TRUE(m->memory_contains(make_test_chunk(i, kBytes)->key));
  // The chunk inside put still counts as pending until written: it and four
  // queued ones fill 5 * kBytes, the other 45 were dropped.
  EXPECT_EQ(m->tier_stats(1).dropped_stores, 45);
  fs->unblock_puts();
  m->flush();
  EXPECT_EQ(fs->num_put_calls(), 5);
}

TEST(KvTierManagerTest, FullQueueDropsAndCountsStores) {
  auto slow = std::make_unique<FakeTier>("slow");
  FakeTier* fs = slow.get();
  fs->block_puts();
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(slow));
  KvTierManager m(std::move(tiers), 2 * kBytes);
  std::vector<KvChunkHandle> c;
  for (uint32_t i = 0; i < 4; ++i) c.push_back(make_test_chunk(i, kBytes));
  m.put_async(c[0]);
  fs->wait_for_put_calls(1);  // c[0] is being written (still counted as pending)
  m.put_async(c[1]);          // fits: pending = 2 * kBytes
  m.put_async(c[2]);          // dropped
  m.put_async(c[3]);          // dropped
  EXPECT_EQ(m.tier_stats(0).dropped_stores, 2);
  fs->unblock_puts();
  m.flush();
  EXPECT_TRUE(fs->contains(c[0]->key));
  EXPECT_TRUE(fs->contains(c[1]->key));
  EXPECT_FALSE(fs->contains(c[2]->key));
  EXPECT_FALSE(fs->contains(c[3]->key));
  // Room again after the drain.
  m.put_async(c[2]);
  m.flush();
  EXPECT_TRUE(fs->contains(c[2]->key));
  EXPECT_EQ(m.tier_stats(0).dropped_stores, 2);
}

TEST(KvTierManagerTest, FailingTierIsBypassedThenRetriedWithDoublingBackoff) {
  StepClock clock;
  auto bad = std::make_unique<FakeTier>("bad");
  auto good = std::make_unique<FakeTier>("good");
  FakeTier* fbad = bad.get();
  FakeTier* fgood = good.get();
  KvChunkHandle c = make_test_chunk(1, kBytes);
  ASSERT_TRUE(fgood->put(c).is_ok());
  fbad->is_failing = true;
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(bad));
  tiers.push_back(std::move(good));
  KvTierManager m(std::move(tiers), 1 << 20, clock.options());
  const std::vector<ChunkKey> keys = {c->key};

  // A fault is not a miss of the whole lookup: the next tier serves it.
  KvTierManager::Loaded r = m.get_prefix(keys);
  ASSERT_EQ(r.chunks.size(), 1u);
  EXPECT_EQ(r.tier_index[0], 1);
  EXPECT_EQ(fbad->num_get_calls(), 1);
  EXPECT_FALSE(m.is_tier_available(0));
  // Bypassed during the backoff (100 ms).
  (void)m.get_prefix(keys);
  EXPECT_EQ(fbad->num_get_calls(), 1);
  clock.advance(99);
  (void)m.get_prefix(keys);
  EXPECT_EQ(fbad->num_get_calls(), 1);
  clock.advance(1);
  (void)m.get_prefix(keys);  // retried, fails again: backoff doubles to 200 ms
  EXPECT_EQ(fbad->num_get_calls(), 2);
  clock.advance(199);
  (void)m.get_prefix(keys);
  EXPECT_EQ(fbad->num_get_calls(), 2);
  clock.advance(1);
  (void)m.get_prefix(keys);  // third fault: 400 ms
  EXPECT_EQ(fbad->num_get_calls(), 3);
  // Stores meanwhile are dropped for the bypassed tier, and counted.
  m.put_async(make_test_chunk(2, kBytes));
  m.flush();
  EXPECT_EQ(m.tier_stats(0).dropped_stores, 1);
  EXPECT_EQ(fbad->num_put_calls(), 0);
  // Recovery: the tier heals; after the backoff one success resets it.
  fbad->is_failing = false;
  clock.advance(400);
  EXPECT_TRUE(m.is_tier_available(0));
  (void)m.get_prefix(keys);  // a miss in "bad": healthy
  EXPECT_EQ(fbad->num_get_calls(), 4);
  EXPECT_TRUE(m.is_tier_available(0));
  // The next fault starts from 100 ms again.
  fbad->is_failing = true;
  (void)m.get_prefix(keys);
  EXPECT_FALSE(m.is_tier_available(0));
  clock.advance(100);
  EXPECT_TRUE(m.is_tier_available(0));
}

// The health lines a manager logs.
struct LogLines {
  std::shared_ptr<std::mutex> mu = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();
  void attach(KvTierHealthOptions* o) const {
    o->log = [mu = mu, lines = lines](const std::string& line) {
      std::lock_guard<std::mutex> lock(*mu);
      lines->push_back(line);
    };
  }
  std::vector<std::string> get() const {
    std::lock_guard<std::mutex> lock(*mu);
    return *lines;
  }
};

TEST(KvTierManagerTest, EachChangeOfHealthIsOneLogLine) {
  StepClock clock;
  LogLines log;
  KvTierHealthOptions health = clock.options();
  log.attach(&health);
  auto bad = std::make_unique<FakeTier>("bad");
  FakeTier* fbad = bad.get();
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(bad));
  KvTierManager m(std::move(tiers), 1 << 20, health);
  const std::vector<ChunkKey> keys = {make_test_chunk(1, 1)->key};
  (void)m.get_prefix(keys);  // healthy: nothing to say
  EXPECT_TRUE(log.get().empty());
  fbad->is_failing = true;
  for (int i = 0; i < 5; ++i) {  // the first fault and four failed retries
    (void)m.get_prefix(keys);
    clock.advance(30'000);
  }
  EXPECT_EQ(fbad->num_get_calls(), 6);
  ASSERT_EQ(log.get().size(), 1u);
  EXPECT_EQ(log.get()[0].rfind("[kv] tier bad: down (", 0), 0u) << log.get()[0];
  fbad->is_failing = false;
  (void)m.get_prefix(keys);
  (void)m.get_prefix(keys);
  ASSERT_EQ(log.get().size(), 2u);
  EXPECT_EQ(log.get()[1], "[kv] tier bad: back up after 5 failed attempts");
  // Down again: a line again.
  fbad->is_failing = true;
  (void)m.get_prefix(keys);
  EXPECT_EQ(log.get().size(), 3u);
}

TEST(KvTierManagerTest, CheckTiersSaysWhichTiersAnswer) {
  StepClock clock;
  LogLines log;
  KvTierHealthOptions health = clock.options();
  log.attach(&health);
  // Port 1 on loopback refuses connections.
  Result<std::unique_ptr<RedisTier>> redis =
      RedisTier::connect("redis://127.0.0.1:1", "", 200, 1 << 20);
  ASSERT_TRUE(redis.is_ok()) << redis.status().message();
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::make_unique<RamTier>(100 * kBytes));
  tiers.push_back(std::move(*redis));
  KvTierManager m(std::move(tiers), 1 << 20, health);
  m.check_tiers({"host memory", "redis://127.0.0.1:1"});
  const std::vector<std::string> lines = log.get();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "[kv] tier ram (host memory): reachable");
  EXPECT_EQ(lines[1].rfind("[kv] tier redis (redis://127.0.0.1:1): unreachable at start-up (", 0),
            0u)
      << lines[1];
  // It starts bypassed, like a tier that just failed.
  EXPECT_TRUE(m.is_tier_available(0));
  EXPECT_FALSE(m.is_tier_available(1));
}

// The case: a Redis that dies and comes back while the engine runs
// is one "down" line and one "back up" line, whatever the traffic between.
TEST(KvTierManagerTest, RedisThatDiesAndComesBackIsOneLineEach) {
  if (!testing::RedisServer::is_available()) GTEST_SKIP() << "redis-server not installed";
  testing::RedisServer server;
  ASSERT_TRUE(server.start());
  StepClock clock;
  LogLines log;
  KvTierHealthOptions health = clock.options();
  log.attach(&health);
  Result<std::unique_ptr<RedisTier>> redis = RedisTier::connect(server.url(), "", 500, 1 << 20);
  ASSERT_TRUE(redis.is_ok()) << redis.status().message();
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(*redis));
  KvTierManager m(std::move(tiers), 1 << 20, health);
  m.check_tiers({server.url()});
  const std::vector<ChunkKey> keys = {make_test_chunk(1, 1)->key};
  (void)m.get_prefix(keys);  // a miss: healthy
  ASSERT_EQ(log.get().size(), 1u);
  EXPECT_EQ(log.get()[0], "[kv] tier redis (" + server.url() + "): reachable");

  server.stop();
  for (int i = 0; i < 4; ++i) {
    (void)m.get_prefix(keys);
    clock.advance(30'000);
  }
  ASSERT_EQ(log.get().size(), 2u);
  EXPECT_EQ(log.get()[1].rfind("[kv] tier redis: down (", 0), 0u) << log.get()[1];

  ASSERT_TRUE(server.start());
  for (int i = 0; i < 4; ++i) {
    (void)m.get_prefix(keys);
    clock.advance(30'000);
  }
  ASSERT_EQ(log.get().size(), 3u);
  EXPECT_EQ(log.get()[2].rfind("[kv] tier redis: back up after ", 0), 0u) << log.get()[2];
}

TEST(KvTierManagerTest, BackoffIsCappedAtThirtySeconds) {
  StepClock clock;
  auto bad = std::make_unique<FakeTier>("bad");
  FakeTier* fbad = bad.get();
  fbad->is_failing = true;
  std::vector<std::unique_ptr<KvTier>> tiers;
  tiers.push_back(std::move(bad));
  KvTierManager m(std::move(tiers), 1 << 20, clock.options());
  const std::vector<ChunkKey> keys = {make_test_chunk(1, 1)->key};
  for (int i = 0; i < 20; ++i) {  // 100 ms * 2^19 would be far beyond the cap
    (void)m.get_prefix(keys);
    clock.advance(30'000);
    EXPECT_TRUE(m.is_tier_available(0)) << i;
  }
  EXPECT_EQ(fbad->num_get_calls(), 20);
}

TEST(KvTierManagerTest, DestructorWritesQueuedStoresToDisk) {
  TempDir dir;
  std::vector<KvChunkHandle> c;
  for (uint32_t i = 0; i < 8; ++i) c.push_back(make_test_chunk(i, 50'000));
  {
    KvTierOptions options;
    options.cpu_bytes = 1 << 20;
    options.disk_dir = dir.path();
    options.disk_bytes = 1 << 24;
    options.chunk_tokens = 32;
    Result<std::unique_ptr<KvTierManager>> m = KvTierManager::create(options, 1 << 20);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    ASSERT_EQ((*m)->num_tiers(), 2u);
    EXPECT_EQ((*m)->tier_name(1), "disk");
    for (const KvChunkHandle& chunk : c) (*m)->put_async(chunk);
  }
  Result<std::unique_ptr<DiskTier>> disk = DiskTier::open(dir.path(), 1 << 24, 1 << 20);
  ASSERT_TRUE(disk.is_ok());
  EXPECT_EQ((*disk)->open_report().num_chunks, 8);
  // And a fresh manager on the same directory finds them (a restart).
  KvTierOptions options;
  options.disk_dir = dir.path();
  Result<std::unique_ptr<KvTierManager>> m = KvTierManager::create(options, 1 << 20);
  ASSERT_TRUE(m.is_ok());
  KvTierManager::Loaded loaded = (*m)->get_prefix(keys_of(c));
  EXPECT_EQ(loaded.chunks.size(), 8u);
}

TEST(KvTierManagerTest, OptionsValidation) {
  KvTierOptions o;
  EXPECT_FALSE(o.enabled());
  EXPECT_TRUE(o.validate(16).is_ok());
  o.chunk_tokens = 24;
  EXPECT_FALSE(o.validate(16).is_ok());
  o.chunk_tokens = 32;
  o.remote_url = "http://x:1";
  EXPECT_TRUE(o.enabled());
  Status s = o.validate(16);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("--kv-remote"), std::string::npos);
  o.remote_url = "redis://127.0.0.1:1";
  EXPECT_TRUE(o.validate(16).is_ok());
  o.remote_url.clear();
  o.remote_password = "x";
  EXPECT_FALSE(o.validate(16).is_ok());
  // A malformed URL fails create(); an unreachable server does not.
  KvTierOptions bad;
  bad.remote_url = "redis://host:notaport";
  EXPECT_FALSE(KvTierManager::create(bad, 1 << 20).is_ok());
  KvTierOptions down;
  down.remote_url = "redis://127.0.0.1:1";
  down.remote_timeout_ms = 50;
  EXPECT_TRUE(KvTierManager::create(down, 1 << 20).is_ok());
}

}  // namespace
}  // namespace strata
