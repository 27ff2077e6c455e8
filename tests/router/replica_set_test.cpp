#include "router/replica_set.h"

#include <gtest/gtest.h>

namespace strata::router {
namespace {

TEST(ReplicaUrl, ParsesAndCanonicalizes) {
  EXPECT_EQ(parse_replica_url("http://10.0.0.5:8000")->url, "http://10.0.0.5:8000");
  EXPECT_EQ(parse_replica_url("http://host/")->url, "http://host:80");
  EXPECT_EQ(parse_replica_url("127.0.0.1:9")->port, 9);
  for (const char* bad : {"https://x:1", "http://x:0", "http://x:70000", "http://x:1/v1", "http://",
                          "http://x:1a", ""}) {
    EXPECT_FALSE(parse_replica_url(bad).is_ok()) << bad;
  }
}

TEST(ReplicaSet, UpdateKeepsStateOfReplicasThatStayAndDrainsTheOthers) {
  FakeClock clock;
  ReplicaSet set(CircuitBreakerOptions{}, &clock);
  auto c1 = set.update({"http://a:1", "http://b:2", "http://a:1"});
  ASSERT_TRUE(c1.is_ok());
  EXPECT_EQ(c1->added, (std::vector<std::string>{"http://a:1", "http://b:2"}));
  std::shared_ptr<Replica> b = set.replicas()[1];
  b->num_routed = 7;
  auto c2 = set.update({"http://b:2", "http://c:3"});
  ASSERT_TRUE(c2.is_ok());
  EXPECT_EQ(c2->added, (std::vector<std::string>{"http://c:3"}));
  EXPECT_EQ(c2->removed, (std::vector<std::string>{"http://a:1"}));
  EXPECT_EQ(set.replicas()[0], b);
  EXPECT_EQ(set.replicas()[0]->num_routed.load(), 7);
  EXPECT_EQ(set.urls(), (std::vector<std::string>{"http://b:2", "http://c:3"}));
  // A bad list changes nothing.
  EXPECT_FALSE(set.update({"http://d:4", "ftp://e"}).is_ok());
  EXPECT_EQ(set.urls().size(), 2u);
}

TEST(ReplicaSet, FailuresEjectAndHealthReadmits) {
  FakeClock clock;
  ReplicaSet set(CircuitBreakerOptions{}, &clock);
  ASSERT_TRUE(set.update({"http://a:1"}).is_ok());
  std::shared_ptr<Replica> a = set.replicas()[0];
  for (int i = 0; i < 3; ++i) a->record_failure("connect refused");
  EXPECT_FALSE(a->is_available());
  clock.advance_ns(int64_t{2'000'000'000});
  EXPECT_TRUE(a->is_available());
  a->record_success();
  EXPECT_EQ(a->state(), CircuitBreaker::State::kClosed);
  EXPECT_EQ(a->num_ejections(), 1);
  EXPECT_EQ(a->num_failures.load(), 3);
}

}  // namespace
}  // namespace strata::router
