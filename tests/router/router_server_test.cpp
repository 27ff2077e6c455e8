// RouterServer against in-process fake replicas (fake_replica.h): exact
// choices from scripted probes, the probe's wire contents, retries before
// the first byte, mid-stream failures, client disconnects, sessions, the
// models union, auth and metrics.
#include "router/router_server.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gguf/gguf.h"
#include "http/http_client.h"
#include "kv/block_hash.h"
#include "router/fake_replica.h"
#include "server/probe_route.h"
#include "tokenizer/tokenizer.h"

namespace strata::router::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const Tokenizer& tokenizer() {
  static const Tokenizer* t = [] {
    static Result<GgufFile> file =
        GgufFile::open(std::string(STRATA_BINARY_DIR) + "/models/llama-f32-peaky.gguf");
    if (!file) return static_cast<Tokenizer*>(nullptr);
    Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::from_gguf(*file);
    return tok ? tok->release() : nullptr;
  }();
  return *t;
}

bool have_model() {
  static const bool ok =
      GgufFile::open(std::string(STRATA_BINARY_DIR) + "/models/llama-f32-peaky.gguf").is_ok();
  return ok;
}

#define REQUIRE_MODEL()                                                          \
  do {                                                                           \
    if (!have_model()) GTEST_FAIL() << "run scripts/make-models.sh build first"; \
  } while (0)

PrefixProbe probe_with(int64_t pool_tokens, int64_t pending_tokens = 0) {
  PrefixProbe p;
  p.block_size = 16;
  p.num_pool_tokens = pool_tokens;
  p.num_pending_prefill_tokens = pending_tokens;
  p.prefill_tokens_per_s = 1000.0;
  p.num_kv_blocks = 64;
  p.num_free_kv_blocks = 64;
  return p;
}

struct Fleet {
  std::vector<std::unique_ptr<FakeReplica>> replicas;
  std::unique_ptr<RouterServer> router;
  http::HttpClient client;

  explicit Fleet(size_t n, RouterOptions o = {}) {
    for (size_t i = 0; i < n; ++i) {
      replicas.push_back(std::make_unique<FakeReplica>("r" + std::to_string(i)));
      o.replicas.push_back(replicas.back()->url());
    }
    o.port = 0;
    if (o.health_interval == std::chrono::milliseconds(1000)) o.health_interval = {};
    if (o.probe_timeout == std::chrono::milliseconds(50)) o.probe_timeout = 500ms;
    Result<std::unique_ptr<RouterServer>> r = RouterServer::create(tokenizer(), std::move(o));
    EXPECT_TRUE(r.is_ok()) << r.status().message();
    if (r) router = std::move(*r);
    if (router) {
      EXPECT_TRUE(router->start().is_ok());
    }
  }

  http::ClientResult post(const std::string& path, const json& body,
                          http::HeaderList headers = {}) {
    http::ClientRequest r;
    r.host = "127.0.0.1";
    r.port = router->port();
    r.method = "POST";
    r.target = path;
    r.body = body.dump();
    r.headers = std::move(headers);
    r.headers.push_back({"Content-Type", "application/json"});
    auto f = client.fetch(std::move(r));
    if (f.wait_for(20s) != std::future_status::ready) {
      ADD_FAILURE() << "no answer within 20 s";
      return {};
    }
    return f.get();
  }
  http::ClientResult get(const std::string& path, http::HeaderList headers = {}) {
    http::ClientRequest r;
    r.host = "127.0.0.1";
    r.port = router->port();
    r.target = path;
    r.headers = std::move(headers);
    auto f = client.fetch(std::move(r));
    if (f.wait_for(20s) != std::future_status::ready) return {};
    return f.get();
  }
  std::vector<int> generations() const {
    std::vector<int> n;
    for (const auto& r : replicas) n.push_back(r->num_generations());
    return n;
  }
};

const char* kPrompt =
    "The quick brown fox jumps over the lazy dog and keeps running through the field until "
    "the sun goes down behind the hills and the night comes.";

json completion(bool stream = false) {
  return json{{"prompt", kPrompt}, {"max_tokens", 2}, {"stream", stream}};
}

std::string served_by(const http::ClientResult& r) {
  const json j = json::parse(r.response.body, nullptr, false);
  if (!j.is_object() || !j.contains("replica")) return "";
  return j["replica"].get<std::string>();
}

TEST(RouterServer, CacheAwareSendsTheRequestToTheReplicaHoldingItsPrefix) {
  REQUIRE_MODEL();
  Fleet f(3);
  f.replicas[0]->set_probe(probe_with(0));
  f.replicas[1]->set_probe(probe_with(32));
  f.replicas[2]->set_probe(probe_with(16));
  const http::ClientResult r = f.post("/v1/completions", completion());
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  EXPECT_EQ(r.response.head.status, 200);
  EXPECT_EQ(served_by(r), "r1");
  EXPECT_EQ(f.generations(), (std::vector<int>{0, 1, 0}));
  for (const auto& rep : f.replicas) EXPECT_EQ(rep->num_probes(), 1);
}

TEST(RouterServer, TheProbeCarriesTheChainedBlockHashesAReplicaWouldCompute) {
  REQUIRE_MODEL();
  Fleet f(1);
  json body = completion();
  body["cache_salt"] = "tenant-7";
  ASSERT_EQ(f.post("/v1/completions", body).response.head.status, 200);
  server::ProbeRequest sent;
  ASSERT_FALSE(server::parse_probe_request(f.replicas[0]->last_probe_body(), &sent));
  const std::vector<int32_t> ids = tokenizer().encode(kPrompt, true, true);
  ASSERT_GE(ids.size(), 32u);
  EXPECT_EQ(sent.block_size, 16);
  EXPECT_EQ(sent.block_hashes, block_hashes_of(ids, 16, "tenant-7"));
}

TEST(RouterServer, ABusyHolderLosesToAnIdleReplica) {
  REQUIRE_MODEL();
  Fleet f(2);
  f.replicas[0]->set_probe(probe_with(32, /*pending_tokens=*/20000));
  f.replicas[1]->set_probe(probe_with(0));
  EXPECT_EQ(served_by(f.post("/v1/completions", completion())), "r1");
}

TEST(RouterServer, AReplicaWhoseProbeTimesOutIsScoredByLoadAlone) {
  REQUIRE_MODEL();
  RouterOptions o;
  o.probe_timeout = 100ms;
  Fleet f(2, o);
  // r0 would hold everything, but does not answer in time.
  f.replicas[0]->set_probe(probe_with(32));
  f.replicas[0]->set_probe_silent(true);
  f.replicas[1]->set_probe(probe_with(16));
  EXPECT_EQ(served_by(f.post("/v1/completions", completion())), "r1");
  EXPECT_GE(f.router->metrics().num_probe_failures.load(), 1);
}

TEST(RouterServer, AFailureBeforeTheFirstByteIsRetriedOnTheNextBest) {
  REQUIRE_MODEL();
  Fleet f(3);
  f.replicas[0]->set_probe(probe_with(32));
  f.replicas[1]->set_probe(probe_with(16));
  f.replicas[2]->set_probe(probe_with(0));
  f.replicas[0]->set_mode(FakeReplica::Mode::kStatus, 503);
  f.replicas[1]->set_mode(FakeReplica::Mode::kDrop);  // the replica's server answers 500
  const http::ClientResult r = f.post("/v1/completions", completion());
  EXPECT_EQ(r.response.head.status, 200);
  EXPECT_EQ(served_by(r), "r2");
  EXPECT_EQ(f.generations(), (std::vector<int>{1, 1, 1}));
  const std::string m = f.router->metrics_text();
  EXPECT_NE(
      m.find("strata_router_replica_retries_total{replica=\"" + f.replicas[0]->url() + "\"} 1"),
      std::string::npos)
      << m;
}

TEST(RouterServer, RetriesAreBoundedAndTheLastErrorReachesTheClient) {
  REQUIRE_MODEL();
  RouterOptions o;
  o.max_retries = 1;
  Fleet f(3, o);
  for (auto& r : f.replicas) r->set_mode(FakeReplica::Mode::kStatus, 429);
  const http::ClientResult r = f.post("/v1/completions", completion());
  EXPECT_EQ(r.response.head.status, 429);
  int total = 0;
  for (int n : f.generations()) total += n;
  EXPECT_EQ(total, 2);  // one try and one retry
}

TEST(RouterServer, AStreamPassesThroughEventByEventWithUsage) {
  REQUIRE_MODEL();
  Fleet f(1);
  f.replicas[0]->set_mode(FakeReplica::Mode::kSse);
  f.replicas[0]->set_cached_tokens(32);
  f.replicas[0]->set_probe(probe_with(32));
  const http::ClientResult r = f.post("/v1/completions", completion(true));
  EXPECT_EQ(r.response.head.status, 200);
  EXPECT_EQ(r.response.head.header("content-type").value_or(""), "text/event-stream");
  const std::string& b = r.response.body;
  EXPECT_NE(b.find("\"text\":\"r0\""), std::string::npos) << b;
  EXPECT_NE(b.find("\"cached_tokens\":32"), std::string::npos) << b;
  EXPECT_EQ(b.substr(b.size() - 14), "data: [DONE]\n\n");
  const std::string m = f.router->metrics_text();
  const std::string u = "{replica=\"" + f.replicas[0]->url() + "\"}";
  EXPECT_NE(m.find("strata_router_replica_actual_cached_tokens_total" + u + " 32"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("strata_router_replica_predicted_cached_tokens_total" + u + " 32"),
            std::string::npos);
}

TEST(RouterServer, AMidStreamFailureEndsWithAnErrorEventAndDone) {
  REQUIRE_MODEL();
  Fleet f(2);
  f.replicas[0]->set_probe(probe_with(32));
  f.replicas[0]->set_mode(FakeReplica::Mode::kMidStream);
  const http::ClientResult r = f.post("/v1/completions", completion(true));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  const std::string& b = r.response.body;
  const size_t first = b.find("\"text\":\"r0\"");
  const size_t error = b.find("\"error\"");
  ASSERT_NE(first, std::string::npos) << b;
  ASSERT_NE(error, std::string::npos) << b;
  EXPECT_LT(first, error);
  EXPECT_EQ(b.substr(b.size() - 14), "data: [DONE]\n\n");
  EXPECT_EQ(f.generations(), (std::vector<int>{1, 0}));  // never duplicated
  EXPECT_EQ(f.router->metrics().num_failed_mid_stream.load(), 1);
}

TEST(RouterServer, AClientDisconnectCancelsTheReplicaCall) {
  REQUIRE_MODEL();
  Fleet f(1);
  f.replicas[0]->set_mode(FakeReplica::Mode::kHang);
  http::ClientRequest req;
  req.host = "127.0.0.1";
  req.port = f.router->port();
  req.method = "POST";
  req.target = "/v1/completions";
  req.body = completion(true).dump();
  std::promise<void> got_data;
  std::atomic<bool> once{false};
  http::ClientCallbacks cb;
  cb.on_data = [&](std::string_view) {
    if (!once.exchange(true)) got_data.set_value();
    return true;
  };
  cb.on_complete = [](const http::ClientOutcome&) {};
  auto call = f.client.start(std::move(req), std::move(cb));
  ASSERT_EQ(got_data.get_future().wait_for(10s), std::future_status::ready);
  call->cancel();
  for (int i = 0; i < 500 && f.replicas[0]->num_disconnects() == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(f.replicas[0]->num_disconnects(), 1);
}

TEST(RouterServer, ASessionStaysOnOneReplica) {
  REQUIRE_MODEL();
  RouterOptions o;
  o.policy = Policy::kSession;
  Fleet f(3, o);
  json body = completion();
  body["user"] = "alice";
  const std::string home = served_by(f.post("/v1/completions", body));
  ASSERT_FALSE(home.empty());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(served_by(f.post("/v1/completions", body)), home);
  // The header names the session too, and no probe is needed for it.
  for (auto& r : f.replicas) EXPECT_EQ(r->num_probes(), 0);
  const std::string by_header =
      served_by(f.post("/v1/completions", completion(), {{"X-Session-Id", "bob"}}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(served_by(f.post("/v1/completions", completion(), {{"X-Session-Id", "bob"}})),
              by_header);
  }
}

TEST(RouterServer, RoundRobinTakesTurns) {
  REQUIRE_MODEL();
  RouterOptions o;
  o.policy = Policy::kRoundRobin;
  Fleet f(3, o);
  std::vector<std::string> seen;
  for (int i = 0; i < 6; ++i) seen.push_back(served_by(f.post("/v1/completions", completion())));
  EXPECT_EQ(seen, (std::vector<std::string>{"r0", "r1", "r2", "r0", "r1", "r2"}));
}

TEST(RouterServer, ModelsAreTheUnionOfTheReplicas) {
  REQUIRE_MODEL();
  FakeReplica a("a", "model-a"), b("b", "model-b"), c("c", "model-a");
  RouterOptions o;
  o.port = 0;
  o.replicas = {a.url(), b.url(), c.url()};
  o.health_interval = {};
  auto r = RouterServer::create(tokenizer(), o);
  ASSERT_TRUE(r.is_ok());
  ASSERT_TRUE((*r)->start().is_ok());
  http::HttpClient client;
  http::ClientRequest req;
  req.host = "127.0.0.1";
  req.port = (*r)->port();
  req.target = "/v1/models";
  const json j = json::parse(client.fetch(req).get().response.body);
  ASSERT_EQ(j["data"].size(), 2u) << j.dump();
  EXPECT_EQ(j["data"][0]["id"], "model-a");
  EXPECT_EQ(j["data"][1]["id"], "model-b");
  req.target = "/v1/models/model-b";
  EXPECT_EQ(client.fetch(req).get().response.head.status, 200);
  req.target = "/v1/models/nope";
  EXPECT_EQ(client.fetch(req).get().response.head.status, 404);
}

TEST(RouterServer, TheRouterKeyGuardsClientsAndTheReplicaKeyGoesUpstream) {
  REQUIRE_MODEL();
  RouterOptions o;
  o.api_key = "front";
  o.replica_api_key = "back";
  Fleet f(1, o);
  EXPECT_EQ(f.post("/v1/completions", completion()).response.head.status, 401);
  EXPECT_EQ(f.get("/health").response.head.status, 200);
  const http::ClientResult r =
      f.post("/v1/completions", completion(), {{"Authorization", "Bearer front"}});
  EXPECT_EQ(r.response.head.status, 200);
  EXPECT_EQ(f.replicas[0]->last_authorization(), "Bearer back");
}

TEST(RouterServer, BadRequestsAreAnsweredByTheRouter) {
  REQUIRE_MODEL();
  Fleet f(1);
  EXPECT_EQ(f.post("/v1/completions", json{{"prompt", 5}}).response.head.status, 400);
  http::ClientRequest r;
  r.host = "127.0.0.1";
  r.port = f.router->port();
  r.method = "POST";
  r.target = "/v1/chat/completions";
  r.body = "{not json";
  EXPECT_EQ(f.client.fetch(r).get().response.head.status, 400);
  EXPECT_EQ(f.generations(), (std::vector<int>{0}));
}

bool eventually(const std::function<bool()>& pred) {
  for (int i = 0; i < 1000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return pred();
}

TEST(RouterServer, HealthChecksEjectAndReadmit) {
  REQUIRE_MODEL();
  RouterOptions o;
  o.health_interval = 20ms;
  o.breaker.failure_threshold = 2;
  o.breaker.initial_backoff_ms = 600000;  // only a health check re-admits
  Fleet f(2, o);
  f.replicas[0]->set_probe(probe_with(32));
  const std::string available0 =
      "strata_router_replica_available{replica=\"" + f.replicas[0]->url() + "\"} ";
  f.replicas[0]->set_health_status(503);
  ASSERT_TRUE(eventually(
      [&] { return f.router->metrics_text().find(available0 + "0") != std::string::npos; }));
  EXPECT_EQ(served_by(f.post("/v1/completions", completion())), "r1");
  EXPECT_EQ(f.replicas[0]->num_generations(), 0);
  f.replicas[0]->set_health_status(200);
  ASSERT_TRUE(eventually(
      [&] { return f.router->metrics_text().find(available0 + "1") != std::string::npos; }));
  EXPECT_EQ(served_by(f.post("/v1/completions", completion())), "r0");
}

TEST(RouterServer, ARequestWaitingOnAReplicaThatGetsEjectedMovesOn) {
  REQUIRE_MODEL();
  RouterOptions o;
  o.health_interval = 20ms;
  o.breaker.failure_threshold = 1;
  o.breaker.initial_backoff_ms = 600000;
  Fleet f(2, o);
  f.replicas[0]->set_probe(probe_with(32));
  f.replicas[0]->set_mode(FakeReplica::Mode::kSilent);
  auto answer =
      std::async(std::launch::async, [&] { return f.post("/v1/completions", completion()); });
  ASSERT_TRUE(eventually([&] { return f.replicas[0]->num_generations() == 1; }));
  f.replicas[0]->set_health_status(503);  // the health checks eject it
  const http::ClientResult r = answer.get();
  EXPECT_EQ(r.response.head.status, 200);
  EXPECT_EQ(served_by(r), "r1");
  EXPECT_TRUE(eventually([&] { return f.replicas[0]->num_disconnects() == 1; }));
}

TEST(RouterServer, AnEjectedReplicaGetsNothing) {
  REQUIRE_MODEL();
  RouterOptions o;
  o.breaker.failure_threshold = 1;
  o.breaker.initial_backoff_ms = 600000;  // only a health check re-admits it
  Fleet f(2, o);
  f.replicas[0]->set_probe(probe_with(32));
  f.replicas[0]->set_mode(FakeReplica::Mode::kStatus, 500);
  EXPECT_EQ(served_by(f.post("/v1/completions", completion())), "r1");  // retried
  f.replicas[0]->set_mode(FakeReplica::Mode::kJson);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(served_by(f.post("/v1/completions", completion())), "r1");
  EXPECT_EQ(f.replicas[0]->num_generations(), 1);
  const std::string m = f.router->metrics_text();
  EXPECT_NE(m.find("strata_router_replica_available{replica=\"" + f.replicas[0]->url() + "\"} 0"),
            std::string::npos);
  EXPECT_EQ(f.get("/health").response.head.status, 200);  // r1 still serves
}

TEST(RouterServer, ProbeFanOutIsLimitedToKCandidatesPlusTheSessionsLast) {
  REQUIRE_MODEL();
  RouterOptions o;
  o.max_probe_candidates = 1;
  Fleet f(3, o);
  for (auto& r : f.replicas) r->set_probe(probe_with(0));
  f.replicas[2]->set_probe(probe_with(32));
  json body = completion();
  body["user"] = "carol";
  f.post("/v1/completions", body);
  int probes = 0;
  for (auto& r : f.replicas) probes += r->num_probes();
  EXPECT_EQ(probes, 1);
  EXPECT_EQ(f.replicas[0]->num_probes(), 1);  // all idle: the first
  // Carol's session went to r0; her next request probes r0 again, even
  // while r0 is the busiest in this router's view.
  f.replicas[0]->set_mode(FakeReplica::Mode::kHang);
  auto hanging =
      std::async(std::launch::async, [&] { return f.post("/v1/completions", completion(true)); });
  ASSERT_TRUE(eventually([&] { return f.replicas[0]->num_generations() == 2; }));
  f.replicas[0]->set_mode(FakeReplica::Mode::kJson);
  EXPECT_EQ(f.post("/v1/completions", body).response.head.status, 200);
  EXPECT_EQ(f.replicas[0]->num_probes(), 3);
  EXPECT_EQ(f.replicas[1]->num_probes() + f.replicas[2]->num_probes(), 0);
  f.replicas[0]->stop();  // ends the hanging stream
  hanging.wait();
}

TEST(RouterServer, SetReplicasAddsAndDrains) {
  REQUIRE_MODEL();
  Fleet f(1);
  FakeReplica extra("extra");
  extra.set_probe(probe_with(32));
  ASSERT_TRUE(f.router->set_replicas({extra.url()}).is_ok());
  EXPECT_EQ(served_by(f.post("/v1/completions", completion())), "extra");
  EXPECT_EQ(f.replicas[0]->num_generations(), 0);
  EXPECT_FALSE(f.router->set_replicas({"ftp://x"}).is_ok());
  EXPECT_EQ(f.router->replica_urls(), (std::vector<std::string>{extra.url()}));
}

}  // namespace
}  // namespace strata::router::testing
