// RedisTier against a real redis-server child process: AUTH, corrupt values,
// and the faults the issue lists - down at start-up, killed mid-run and
// brought back, slowed by DEBUG SLEEP - each ending in recovery.
#include "kvtier/redis_tier.h"

#include <gtest/gtest.h>

#include "kvtier/chunk_codec.h"
#include "kvtier/kv_tier_manager.h"
#include "kvtier/ram_tier.h"
#include "kvtier_test_util.h"

namespace strata {
namespace {

using testing::make_test_chunk;
using testing::RedisServer;

constexpr size_t kRedisMax = size_t{4} << 20;
constexpr int32_t kTimeoutMs = 200;

class RedisTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RedisServer::is_available()) {
      GTEST_SKIP() << "redis-server is not installed (scripts/install-deps.sh installs it)";
    }
  }
  static std::unique_ptr<RedisTier> connect(const std::string& url, const std::string& pw = {}) {
    Result<std::unique_ptr<RedisTier>> t = RedisTier::connect(url, pw, kTimeoutMs, kRedisMax);
    EXPECT_TRUE(t.is_ok()) << t.status().to_string();
    return t ? std::move(*t) : nullptr;
  }
};

// A manager over [ram, redis] with a stepped clock.
struct RedisManager {
  std::shared_ptr<std::atomic<int64_t>> now = std::make_shared<std::atomic<int64_t>>(1'000'000);
  std::unique_ptr<KvTierManager> manager;
  RedisTier* redis = nullptr;

  explicit RedisManager(const std::string& url) {
    std::vector<std::unique_ptr<KvTier>> tiers;
    tiers.push_back(std::make_unique<RamTier>(size_t{1} << 20));
    Result<std::unique_ptr<RedisTier>> t = RedisTier::connect(url, "", kTimeoutMs, kRedisMax);
    redis = t->get();
    tiers.push_back(std::move(*t));
    KvTierHealthOptions h;
    h.now_ms = [n = now] { return n->load(); };
    manager = std::make_unique<KvTierManager>(std::move(tiers), size_t{1} << 20, h);
  }
  void advance_past_backoff() { *now += 31'000; }
};

TEST_F(RedisTierTest, MalformedUrlsAreRejected) {
  for (const char* url : {"http://h:1", "redis://", "redis://h:0", "redis://h:99999",
                          "redis://h:12x", "redis://u@h:1"}) {
    EXPECT_FALSE(RedisTier::connect(url, "", kTimeoutMs, kRedisMax).is_ok()) << url;
  }
  EXPECT_EQ(RedisTier::redis_key(make_test_chunk(1, 1)->key).rfind("strata:kv:v1:", 0), 0u);
}

TEST_F(RedisTierTest, AuthWithPassword) {
  RedisServer server("s3cret");
  ASSERT_TRUE(server.start());
  KvChunkHandle c = make_test_chunk(1, 1000);

  std::unique_ptr<RedisTier> good = connect(server.url(), "s3cret");
  ASSERT_TRUE(good->put(c).is_ok());
  Result<KvChunkHandle> got = good->get(c->key);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ((*got)->payload, c->payload);

  for (const std::string pw : {"", "wrong"}) {
    std::unique_ptr<RedisTier> bad = connect(server.url(), pw);
    Result<KvChunkHandle> r = bad->get(c->key);
    ASSERT_FALSE(r.is_ok()) << pw;
    EXPECT_TRUE(is_tier_fault(r.status())) << r.status().to_string();
    EXPECT_FALSE(bad->contains(c->key));
    EXPECT_GE(bad->stats().errors, 1);
  }
}

TEST_F(RedisTierTest, CorruptOrForeignValuesAreMissesAndDeleted) {
  RedisServer server;
  ASSERT_TRUE(server.start());
  std::unique_ptr<RedisTier> tier = connect(server.url());
  KvChunkHandle c = make_test_chunk(1, 1000);
  const std::string key = RedisTier::redis_key(c->key);

  server.command("SET " + key + " garbage");
  Result<KvChunkHandle> r = tier->get(c->key);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().to_string();
  EXPECT_EQ(tier->stats().errors, 1);
  EXPECT_EQ(server.command("EXISTS " + key), "0");

  // A value from another model stored under this key.
  ModelFingerprint other;
  other.digest[5] = 9;
  ASSERT_TRUE(tier->put(make_test_chunk(1, 1000, other)).is_ok());
  server.command("RENAME " + RedisTier::redis_key(make_test_chunk(1, 1000, other)->key) + " " +
                 key);
  r = tier->get(c->key);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("does not match"), std::string::npos);
  EXPECT_EQ(tier->stats().errors, 2);

  // A good copy can be stored again and read back.
  ASSERT_TRUE(tier->put(c).is_ok());
  EXPECT_TRUE(tier->get(c->key).is_ok());
}

TEST_F(RedisTierTest, WrongTypedValueIsAFaultNotACrash) {
  RedisServer server;
  ASSERT_TRUE(server.start());
  std::unique_ptr<RedisTier> tier = connect(server.url());
  KvChunkHandle c = make_test_chunk(1, 100);
  server.command("LPUSH " + RedisTier::redis_key(c->key) + " x");
  Result<KvChunkHandle> r = tier->get(c->key);
  EXPECT_FALSE(r.is_ok());
  EXPECT_GE(tier->stats().errors, 1);
  EXPECT_TRUE(tier->put(make_test_chunk(2, 100)).is_ok());  // reconnects, carries on
}

TEST_F(RedisTierTest, OversizedValueIsRejectedBeforeDecoding) {
  RedisServer server;
  ASSERT_TRUE(server.start());
  Result<std::unique_ptr<RedisTier>> small = RedisTier::connect(server.url(), "", kTimeoutMs, 500);
  std::unique_ptr<RedisTier> big = connect(server.url());
  KvChunkHandle c = make_test_chunk(1, 1000);
  ASSERT_TRUE(big->put(c).is_ok());
  Result<KvChunkHandle> r = (*small)->get(c->key);
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("exceeds the limit"), std::string::npos);
  EXPECT_EQ((*small)->put(c).code(), StatusCode::kInvalidArgument);  // too big to store there
}

TEST_F(RedisTierTest, DownAtStartIsBypassedAndRecoversAfterBackoff) {
  RedisServer server;  // port chosen, not started
  RedisManager rm(server.url());
  EXPECT_FALSE(rm.redis->is_connected());
  KvChunkHandle a = make_test_chunk(1, 1000);
  KvChunkHandle b = make_test_chunk(2, 1000);

  rm.manager->put_async(a);  // RAM takes it; the Redis store fails: a fault
  rm.manager->flush();
  EXPECT_FALSE(rm.manager->is_tier_available(1));
  EXPECT_GE(rm.manager->tier_stats(1).errors, 1);
  EXPECT_EQ(rm.manager->get_prefix(std::vector<ChunkKey>{a->key}).chunks.size(), 1u);  // RAM

  ASSERT_TRUE(server.start());
  // Still bypassed until the backoff elapses: this store is dropped.
  rm.manager->put_async(b);
  rm.manager->flush();
  EXPECT_EQ(rm.manager->tier_stats(1).dropped_stores, 1);
  EXPECT_EQ(server.command("DBSIZE"), "0");

  rm.advance_past_backoff();
  KvChunkHandle c = make_test_chunk(3, 1000);
  rm.manager->put_async(c);
  rm.manager->flush();
  EXPECT_TRUE(rm.manager->is_tier_available(1));
  EXPECT_EQ(server.command("EXISTS " + RedisTier::redis_key(c->key)), "1");
  // Another replica (a fresh manager) reads it from Redis.
  RedisManager replica(server.url());
  KvTierManager::Loaded loaded = replica.manager->get_prefix(std::vector<ChunkKey>{c->key});
  ASSERT_EQ(loaded.chunks.size(), 1u);
  EXPECT_EQ(loaded.tier_index[0], 1);
  EXPECT_EQ(loaded.chunks[0]->payload, c->payload);
}

TEST_F(RedisTierTest, KilledMidRunAndBroughtBack) {
  RedisServer server;
  ASSERT_TRUE(server.start());
  std::unique_ptr<RedisTier> tier = connect(server.url());
  KvChunkHandle a = make_test_chunk(1, 1000);
  ASSERT_TRUE(tier->put(a).is_ok());
  ASSERT_TRUE(tier->is_connected());

  server.stop();  // SIGKILL: the open connection dies with it
  Result<KvChunkHandle> r = tier->get(a->key);
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(is_tier_fault(r.status())) << r.status().to_string();
  EXPECT_FALSE(tier->is_connected());
  EXPECT_TRUE(is_tier_fault(tier->put(make_test_chunk(2, 1000))));
  const int64_t errors = tier->stats().errors;
  EXPECT_GE(errors, 2);

  ASSERT_TRUE(server.start());  // same port, empty (no persistence)
  r = tier->get(a->key);        // reconnects by itself
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().to_string();
  ASSERT_TRUE(tier->put(a).is_ok());
  EXPECT_TRUE(tier->get(a->key).is_ok());
  EXPECT_EQ(tier->stats().errors, errors);
}

TEST_F(RedisTierTest, SlowServerTimesOutAsAFaultWithoutHanging) {
  RedisServer server;
  ASSERT_TRUE(server.start());
  std::unique_ptr<RedisTier> tier = connect(server.url());
  KvChunkHandle a = make_test_chunk(1, 1000);
  ASSERT_TRUE(tier->put(a).is_ok());

  ASSERT_TRUE(server.begin_debug_sleep(1));
  // The server is busy for ~1 s; a 200 ms timeout must give up long before:
  // succeeding would mean the call waited out the sleep.
  Result<KvChunkHandle> r = tier->get(a->key);
  ASSERT_FALSE(r.is_ok());
  EXPECT_TRUE(is_tier_fault(r.status())) << r.status().to_string();
  EXPECT_FALSE(tier->contains(a->key));  // false on error
  EXPECT_GE(tier->stats().errors, 2);
  server.end_debug_sleep();

  Result<KvChunkHandle> again = tier->get(a->key);  // reconnects; the late reply is gone
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ((*again)->payload, a->payload);
}

TEST_F(RedisTierTest, ManagerRidesOutAKilledServerAndRecovers) {
  RedisServer server;
  ASSERT_TRUE(server.start());
  RedisManager rm(server.url());
  KvChunkHandle a = make_test_chunk(1, 1000);
  rm.manager->put_async(a);
  rm.manager->flush();
  ASSERT_EQ(server.command("EXISTS " + RedisTier::redis_key(a->key)), "1");

  server.stop();
  KvChunkHandle b = make_test_chunk(2, 1000);
  rm.manager->put_async(b);  // RAM has it at once; the Redis store faults
  rm.manager->flush();
  EXPECT_FALSE(rm.manager->is_tier_available(1));
  EXPECT_TRUE(rm.manager->memory_contains(b->key));
  // Lookups keep working from RAM and end at the first chunk no healthy tier has.
  KvChunkHandle only_remote = make_test_chunk(3, 1000);
  KvTierManager::Loaded loaded =
      rm.manager->get_prefix(std::vector<ChunkKey>{a->key, b->key, only_remote->key});
  EXPECT_EQ(loaded.chunks.size(), 2u);
  EXPECT_EQ(loaded.tier_index, (std::vector<int>{0, 0}));

  ASSERT_TRUE(server.start());  // back, empty
  rm.advance_past_backoff();
  KvChunkHandle c = make_test_chunk(4, 1000);
  rm.manager->put_async(c);
  rm.manager->flush();
  EXPECT_TRUE(rm.manager->is_tier_available(1));
  EXPECT_EQ(server.command("EXISTS " + RedisTier::redis_key(c->key)), "1");
}

TEST_F(RedisTierTest, CreateFromOptionsWithPassword) {
  RedisServer server("pw");
  ASSERT_TRUE(server.start());
  KvTierOptions options;
  options.remote_url = server.url();
  options.remote_password = "pw";
  ASSERT_TRUE(options.validate(16).is_ok());
  Result<std::unique_ptr<KvTierManager>> m = KvTierManager::create(options, kRedisMax);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  ASSERT_EQ((*m)->num_tiers(), 1u);
  EXPECT_EQ((*m)->tier_name(0), "redis");
  KvChunkHandle a = make_test_chunk(1, 1000);
  (*m)->put_async(a);
  (*m)->flush();
  KvTierManager::Loaded loaded = (*m)->get_prefix(std::vector<ChunkKey>{a->key});
  ASSERT_EQ(loaded.chunks.size(), 1u);
  EXPECT_EQ(loaded.chunks[0]->payload, a->payload);
  EXPECT_EQ((*m)->tier_stats(0).errors, 0);
}

}  // namespace
}  // namespace strata
