// RouterServer over replicas backed by real Engines (engine_replica.h): the
// router's tokenization and block hashes meet the engine's prefix cache, so
// routing follows what each engine really holds, and the router's predicted
// cached tokens equal the engines' reported ones, request by request.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine_test_util.h"
#include "http/http_client.h"
#include "router/engine_replica.h"
#include "router/router_server.h"

namespace strata::router::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

struct EngineFleet {
  std::vector<std::unique_ptr<EngineReplica>> replicas;
  std::unique_ptr<RouterServer> router;
  http::HttpClient client;

  explicit EngineFleet(size_t n) {
    RouterOptions o;
    for (size_t i = 0; i < n; ++i) {
      replicas.push_back(std::make_unique<EngineReplica>("e" + std::to_string(i)));
      EXPECT_TRUE(replicas.back()->ok());
      o.replicas.push_back(replicas.back()->url());
    }
    o.port = 0;
    o.health_interval = {};
    o.probe_timeout = 5000ms;  // real engines on a loaded machine: never time out here
    auto r = RouterServer::create(*strata::testing::peaky_model().tokenizer, o);
    EXPECT_TRUE(r.is_ok());
    if (r) router = std::move(*r);
    if (router) {
      EXPECT_TRUE(router->start().is_ok());
    }
  }

  json chat(uint16_t port, const json& messages) {
    http::ClientRequest r;
    r.host = "127.0.0.1";
    r.port = port;
    r.method = "POST";
    r.target = "/v1/chat/completions";
    r.body = json{{"messages", messages}, {"max_tokens", 4}}.dump();
    r.headers.push_back({"Content-Type", "application/json"});
    auto f = client.fetch(std::move(r));
    if (f.wait_for(60s) != std::future_status::ready) return json();
    http::ClientResult res = f.get();
    EXPECT_EQ(res.response.head.status, 200) << res.response.body;
    return json::parse(res.response.body, nullptr, false);
  }
};

int64_t metric(const std::string& text, const std::string& name, const std::string& url) {
  const std::string key = name + "{replica=\"" + url + "\"} ";
  const size_t at = text.find(key);
  return at == std::string::npos ? -1 : std::stoll(text.substr(at + key.size()));
}

// A chat whose system prompt starts with `who`, so two conversations share
// no block, and is long enough that holding it outweighs any difference in
// the replicas' measured prefill rates.
json conversation(const std::string& who) {
  return json::array(
      {{{"role", "system"},
        {"content", who + " is who you speak for, alone, in the long story of the old river "
                          "town, its stone bridge, its mill, its market and the people "
                          "who crossed it."}},
       {{"role", "user"}, {"content", "Where were we?"}}});
}

TEST(RouterServerEngine, TurnsGoWhereTheEngineHoldsTheirPrefixAndPredictionsAreExact) {
  STRATA_REQUIRE_MODEL();
  EngineFleet f(3);
  ASSERT_NE(f.router, nullptr);
  json a = conversation("Ada"), b = conversation("Bo");
  // e1 already served Ada's opening, e2 Bo's.
  // The prompt ids a replica builds for a conversation (as the router does).
  const auto prompt_of = [](const server::PromptBuilder& builder, const json& conv) {
    server::ProtocolLimits limits;
    limits.vocab_size = strata::testing::peaky_model().tokenizer->vocab_size();
    limits.max_model_len = 1 << 20;
    server::BuiltPrompt p;
    EXPECT_FALSE(builder.build(json{{"messages", conv}}, /*is_chat=*/true, limits, "", &p));
    return p.prompts.empty() ? std::vector<int32_t>{} : p.prompts.front();
  };
  // A first step pages the weights in; rates measured after it are steady.
  for (const auto& r : f.replicas) r->warm(strata::testing::random_prompt(3, 40));
  const std::vector<int32_t> ida = prompt_of(f.replicas[1]->builder(), a);
  f.replicas[1]->warm(ida);
  f.replicas[2]->warm(prompt_of(f.replicas[2]->builder(), b));

  for (int turn = 0; turn < 2; ++turn) {
    for (const auto& [conv, home] :
         std::vector<std::pair<json*, std::string>>{{&a, "e1"}, {&b, "e2"}}) {
      const json r = f.chat(f.router->port(), *conv);
      ASSERT_TRUE(r.is_object());
      EXPECT_EQ(r["replica"], home) << "turn " << turn;
      EXPECT_GT(r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>(), 0);
      conv->push_back({{"role", "assistant"}, {"content", r["choices"][0]["message"]["content"]}});
      conv->push_back(
          {{"role", "user"}, {"content", "And then, turn " + std::to_string(turn) + "?"}});
    }
  }
  EXPECT_EQ(f.replicas[0]->num_generations(), 0);
  const std::string m = f.router->metrics_text();
  for (const auto& r : f.replicas) {
    const int64_t predicted =
        metric(m, "strata_router_replica_predicted_cached_tokens_total", r->url());
    const int64_t actual = metric(m, "strata_router_replica_actual_cached_tokens_total", r->url());
    EXPECT_EQ(predicted, actual) << r->url() << "\n" << m;
  }
  EXPECT_GT(metric(m, "strata_router_replica_actual_cached_tokens_total", f.replicas[1]->url()),
            static_cast<int64_t>(ida.size()) / 2);
}

TEST(RouterServerEngine, MultiTurnCachedTokensEqualASingleEngines) {
  STRATA_REQUIRE_MODEL();
  auto run = [](EngineFleet& f, uint16_t port) {
    std::vector<json> convs = {conversation("Cy"), conversation("Di"), conversation("Ed")};
    int64_t cached = 0;
    for (int turn = 0; turn < 2; ++turn) {
      for (json& c : convs) {
        const json r = f.chat(port, c);
        if (!r.is_object()) return int64_t{-1};
        cached += r["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
        c.push_back({{"role", "assistant"}, {"content", r["choices"][0]["message"]["content"]}});
        c.push_back({{"role", "user"}, {"content", "More, " + std::to_string(turn) + "."}});
      }
    }
    return cached;
  };
  EngineFleet single(1);
  const int64_t alone =
      run(single, static_cast<uint16_t>(std::stoi(single.replicas[0]->url().substr(17))));
  EngineFleet three(3);
  const int64_t routed = run(three, three.router->port());
  EXPECT_GT(alone, 0);
  EXPECT_EQ(routed, alone);
}

}  // namespace
}  // namespace strata::router::testing
