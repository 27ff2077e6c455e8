// One conformance suite for every KvTier: the in-memory fake, RAM, disk and
// Redis. Each test gets a fresh tier from the factory named by the parameter.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "kvtier/chunk_codec.h"
#include "kvtier/disk_tier.h"
#include "kvtier/ram_tier.h"
#include "kvtier/redis_tier.h"
#include "kvtier_test_util.h"

namespace strata {
namespace {

using testing::FakeTier;
using testing::make_test_chunk;
using testing::RedisServer;
using testing::TempDir;

constexpr size_t kPayloadBytes = 4096;
constexpr size_t kMaxPayloadBytes = size_t{16} << 20;

// One Redis server for the whole suite (FLUSHALL between tests), stopped
// when the test binary exits.
RedisServer* shared_redis() {
  static RedisServer server;
  if (!server.is_running() && RedisServer::is_available()) (void)server.start();
  return &server;
}

struct TierCase {
  std::string name;
  bool is_bounded = false;  // has a capacity and evicts
  bool has_gauges = true;   // stored_chunks/stored_bytes are meaningful
  // Capacity: room for `num_chunks` chunks of kPayloadBytes payload.
  std::function<std::unique_ptr<KvTier>(size_t num_chunks, const std::string& dir)> make;
};

std::vector<TierCase> tier_cases() {
  return {
      {"fake", false, true,
       [](size_t, const std::string&) { return std::make_unique<FakeTier>(); }},
      {"ram", true, true,
       [](size_t n, const std::string&) -> std::unique_ptr<KvTier> {
         return std::make_unique<RamTier>(n * kPayloadBytes + kPayloadBytes / 2);
       }},
      {"disk", true, true,
       [](size_t n, const std::string& dir) -> std::unique_ptr<KvTier> {
         auto t = DiskTier::open(dir, n * (kPayloadBytes + kChunkHeaderBytes) + kPayloadBytes / 2,
                                 kMaxPayloadBytes);
         return t ? std::move(*t) : nullptr;
       }},
      {"redis", false, false,
       [](size_t, const std::string&) -> std::unique_ptr<KvTier> {
         RedisServer* server = shared_redis();
         if (!server->is_running()) return nullptr;
         server->command("FLUSHALL");
         auto t = RedisTier::connect(server->url(), "", 2000, kMaxPayloadBytes);
         return t ? std::move(*t) : nullptr;
       }},
  };
}

void PrintTo(const TierCase& c, std::ostream* os) {
  *os << c.name;
}

class TierConformanceTest : public ::testing::TestWithParam<TierCase> {
 protected:
  void SetUp() override {
    if (GetParam().name == "redis" && !RedisServer::is_available()) {
      GTEST_SKIP() << "redis-server is not installed (scripts/install-deps.sh installs it)";
    }
    tier_ = GetParam().make(1000, dir_.path());
    ASSERT_NE(tier_, nullptr);
  }

  TempDir dir_;
  std::unique_ptr<KvTier> tier_;
};

TEST_P(TierConformanceTest, PutGetContainsRemove) {
  KvChunkHandle c = make_test_chunk(1, kPayloadBytes);
  EXPECT_FALSE(tier_->contains(c->key));
  ASSERT_TRUE(tier_->put(c).is_ok());
  EXPECT_TRUE(tier_->contains(c->key));
  Result<KvChunkHandle> got = tier_->get(c->key);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ((*got)->key, c->key);
  EXPECT_EQ((*got)->num_tokens, c->num_tokens);
  EXPECT_EQ((*got)->payload, c->payload);
  ASSERT_TRUE(tier_->remove(c->key).is_ok());
  EXPECT_FALSE(tier_->contains(c->key));
  Result<KvChunkHandle> gone = tier_->get(c->key);
  ASSERT_FALSE(gone.is_ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
}

TEST_P(TierConformanceTest, MissingKeyIsNotFound) {
  KvChunkHandle c = make_test_chunk(2, kPayloadBytes);
  EXPECT_FALSE(tier_->contains(c->key));
  Result<KvChunkHandle> got = tier_->get(c->key);
  ASSERT_FALSE(got.is_ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(tier_->remove(c->key).is_ok());  // removing a missing key is fine
  const TierStats s = tier_->stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.errors, 0);
}

TEST_P(TierConformanceTest, PutIsIdempotent) {
  KvChunkHandle c = make_test_chunk(3, kPayloadBytes);
  ASSERT_TRUE(tier_->put(c).is_ok());
  ASSERT_TRUE(tier_->put(c).is_ok());
  // A second handle with the same key and bytes (as another replica stores it).
  ASSERT_TRUE(tier_->put(make_test_chunk(3, kPayloadBytes)).is_ok());
  const TierStats s = tier_->stats();
  EXPECT_EQ(s.bytes_written, static_cast<int64_t>(kPayloadBytes));
  if (GetParam().has_gauges) {
    EXPECT_EQ(s.stored_chunks, 1);
  }
  Result<KvChunkHandle> got = tier_->get(c->key);
  ASSERT_TRUE(got.is_ok());
  EXPECT_EQ((*got)->payload, c->payload);
}

TEST_P(TierConformanceTest, LargePayloadRoundTrips) {
  tier_ = GetParam().make((size_t{64} << 20) / kPayloadBytes, dir_.path());  // room for 64 MiB
  ASSERT_NE(tier_, nullptr);
  KvChunkHandle c = make_test_chunk(4, size_t{12} << 20);
  ASSERT_TRUE(tier_->put(c).is_ok());
  Result<KvChunkHandle> got = tier_->get(c->key);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ((*got)->payload, c->payload);
  EXPECT_EQ(tier_->stats().bytes_read, static_cast<int64_t>(c->payload.size()));
}

TEST_P(TierConformanceTest, EvictsLeastRecentlyUsedUnderCapacity) {
  if (!GetParam().is_bounded) GTEST_SKIP() << GetParam().name << " is not bounded";
  tier_ = GetParam().make(3, dir_.path());
  ASSERT_NE(tier_, nullptr);
  std::vector<KvChunkHandle> c;
  for (uint32_t i = 0; i < 4; ++i) c.push_back(make_test_chunk(10 + i, kPayloadBytes));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(tier_->put(c[i]).is_ok());
  ASSERT_TRUE(tier_->get(c[0]->key).is_ok());  // c[1] is now least recently used
  ASSERT_TRUE(tier_->put(c[3]).is_ok());
  EXPECT_TRUE(tier_->contains(c[0]->key));
  EXPECT_FALSE(tier_->contains(c[1]->key));
  EXPECT_TRUE(tier_->contains(c[2]->key));
  EXPECT_TRUE(tier_->contains(c[3]->key));
  const TierStats s = tier_->stats();
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.stored_chunks, 3);
  // A chunk larger than the whole capacity is refused as the chunk's problem.
  Status too_big = tier_->put(make_test_chunk(20, 5 * kPayloadBytes));
  EXPECT_EQ(too_big.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(is_tier_fault(too_big));
}

TEST_P(TierConformanceTest, StatsCountersAreExact) {
  KvChunkHandle a = make_test_chunk(30, kPayloadBytes);
  KvChunkHandle b = make_test_chunk(31, 2 * kPayloadBytes);
  ASSERT_TRUE(tier_->put(a).is_ok());
  ASSERT_TRUE(tier_->put(b).is_ok());
  ASSERT_TRUE(tier_->get(a->key).is_ok());
  ASSERT_TRUE(tier_->get(a->key).is_ok());
  ASSERT_TRUE(tier_->get(b->key).is_ok());
  ASSERT_FALSE(tier_->get(make_test_chunk(32, 1)->key).is_ok());
  const TierStats s = tier_->stats();
  EXPECT_EQ(s.hits, 3);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.bytes_read, static_cast<int64_t>(4 * kPayloadBytes));
  EXPECT_EQ(s.bytes_written, static_cast<int64_t>(3 * kPayloadBytes));
  EXPECT_EQ(s.errors, 0);
  EXPECT_EQ(s.evictions, 0);
  if (GetParam().has_gauges) {
    EXPECT_EQ(s.stored_chunks, 2);
    ASSERT_TRUE(tier_->remove(a->key).is_ok());
    EXPECT_EQ(tier_->stats().stored_chunks, 1);
  }
  if (GetParam().name != "fake") {
    EXPECT_EQ(s.get_latency.count, 4);
    EXPECT_EQ(s.put_latency.count, 2);
  }
}

TEST_P(TierConformanceTest, ConcurrentPutsAndGetsAreSafe) {
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < 20; ++i) {
        KvChunkHandle c = make_test_chunk(100 + (i % 10), 512);  // threads share keys
        EXPECT_TRUE(tier_->put(c).is_ok());
        Result<KvChunkHandle> got = tier_->get(c->key);
        if (got) {
          EXPECT_EQ((*got)->payload, c->payload);
        }
        (void)t;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (uint32_t i = 0; i < 10; ++i) {
    EXPECT_TRUE(tier_->contains(make_test_chunk(100 + i, 512)->key));
  }
  EXPECT_EQ(tier_->stats().errors, 0);
  EXPECT_EQ(tier_->stats().bytes_written, 10 * 512);
}

INSTANTIATE_TEST_SUITE_P(AllTiers, TierConformanceTest, ::testing::ValuesIn(tier_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace strata
