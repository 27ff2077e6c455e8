// POST /strata/v1/probe against a real small Engine: what it reports before
// and after a prompt was computed, salts, another block size, bad bodies,
// and the answer's round trip through the router's parser.
#include "server/probe_route.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/engine_test_util.h"
#include "kv/block_hash.h"

namespace strata::server {
namespace {

using nlohmann::json;
using strata::testing::peaky_model;

std::unique_ptr<Engine> make_engine() {
  EngineOptions o = strata::testing::small_options(64);
  o.num_threads = 1;
  Result<std::unique_ptr<Engine>> e =
      Engine::create(*peaky_model().weights, *peaky_model().tokenizer, o);
  EXPECT_TRUE(e.is_ok()) << e.status().message();
  return e ? std::move(*e) : nullptr;
}

// Runs one greedy request to the end, so its full blocks are cached.
void run(Engine& engine, std::vector<int32_t> prompt, std::string salt = {}) {
  GenerationRequest r = strata::testing::greedy_request(std::move(prompt), 1);
  r.cache_salt = std::move(salt);
  Result<std::shared_ptr<RequestStream>> s = engine.add_request(std::move(r));
  ASSERT_TRUE(s.is_ok());
  while ((*s)->pop()) {
  }
}

PrefixProbe probe(const Engine& engine, int32_t block_size, const std::vector<BlockHash>& h) {
  const http::HttpReply reply = handle_probe(engine, probe_request_body(block_size, h));
  EXPECT_EQ(reply.status, 200) << reply.body;
  EXPECT_EQ(reply.content_type, "application/json");
  Result<PrefixProbe> p = parse_probe_answer(reply.body);
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return p ? *p : PrefixProbe{};
}

TEST(ProbeRoute, CountsTheLeadingBlocksTheEngineHolds) {
  STRATA_REQUIRE_MODEL();
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = strata::testing::random_prompt(7, 70);  // 4 full blocks
  const std::vector<BlockHash> hashes = block_hashes_of(prompt, 16);
  ASSERT_EQ(hashes.size(), 4u);

  PrefixProbe before = probe(*engine, 16, hashes);
  EXPECT_EQ(before.block_size, 16);
  EXPECT_EQ(before.num_pool_tokens, 0);
  EXPECT_EQ(before.num_kv_blocks, engine->num_kv_blocks());
  EXPECT_EQ(before.num_running + before.num_waiting, 0);

  run(*engine, prompt);
  EXPECT_EQ(probe(*engine, 16, hashes).num_pool_tokens, 64);
  // A longer prompt sharing the first 3 blocks: 48 leading tokens.
  std::vector<int32_t> other(prompt.begin(), prompt.begin() + 48);
  const std::vector<int32_t> tail = strata::testing::random_prompt(8, 40);
  other.insert(other.end(), tail.begin(), tail.end());
  EXPECT_EQ(probe(*engine, 16, block_hashes_of(other, 16)).num_pool_tokens, 48);
  // The same tokens under a salt are other blocks.
  EXPECT_EQ(probe(*engine, 16, block_hashes_of(prompt, 16, "tenant")).num_pool_tokens, 0);
}

TEST(ProbeRoute, AnotherBlockSizeLooksNothingUpAndNamesTheEngines) {
  STRATA_REQUIRE_MODEL();
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> prompt = strata::testing::random_prompt(9, 70);
  run(*engine, prompt);
  const PrefixProbe p = probe(*engine, 32, block_hashes_of(prompt, 32));
  EXPECT_EQ(p.block_size, 16);
  EXPECT_EQ(p.num_pool_tokens, 0);
}

TEST(ProbeRoute, BadBodiesAre400s) {
  STRATA_REQUIRE_MODEL();
  std::unique_ptr<Engine> engine = make_engine();
  ASSERT_NE(engine, nullptr);
  const std::string good_hash(64, 'a');
  for (const std::string& body : std::vector<std::string>{
           "", "[]", "{}", "{\"block_size\":0,\"block_hashes\":[]}", "{\"block_size\":16}",
           "{\"block_size\":16,\"block_hashes\":[\"xyz\"]}",
           "{\"block_size\":16,\"block_hashes\":[\"" + good_hash.substr(1) + "g\"]}",
           "{\"block_size\":16,\"block_hashes\":[7]}", std::string(100, '[')}) {
    const http::HttpReply r = handle_probe(*engine, body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_TRUE(json::parse(r.body, nullptr, false).contains("error")) << r.body;
  }
  std::string many = "{\"block_size\":16,\"block_hashes\":[";
  for (size_t i = 0; i <= kMaxProbeBlockHashes; ++i) many += (i ? ",\"" : "\"") + good_hash + "\"";
  many += "]}";
  EXPECT_EQ(handle_probe(*engine, many).status, 400);
  EXPECT_EQ(handle_probe(*engine, "{\"block_size\":16,\"block_hashes\":[]}").status, 200);
}

TEST(ProbeRoute, TheAnswerRoundTripsAndMalformedAnswersAreErrors) {
  PrefixProbe p;
  p.block_size = 32;
  p.num_pool_tokens = 96;
  p.tiers = {{"ram", 128, true, 1e5}, {"redis", 256, false, 0.0}};
  p.num_running = 2;
  p.num_waiting = 3;
  p.num_loading = 1;
  p.num_pending_prefill_tokens = 500;
  p.num_free_kv_blocks = 10;
  p.num_kv_blocks = 20;
  p.prefill_tokens_per_s = 812.5;
  p.decode_tokens_per_s = 31.0;
  Result<PrefixProbe> back = parse_probe_answer(probe_answer_json(p).dump());
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back->num_pool_tokens, 96);
  ASSERT_EQ(back->tiers.size(), 2u);
  EXPECT_EQ(back->tiers[1].name, "redis");
  EXPECT_EQ(back->tiers[1].num_tokens, 256);
  EXPECT_FALSE(back->tiers[1].is_available);
  EXPECT_EQ(back->num_pending_prefill_tokens, 500);
  EXPECT_DOUBLE_EQ(back->prefill_tokens_per_s, 812.5);
  for (const char* bad :
       {"", "null", "{}", "{\"block_size\":16,\"num_pool_tokens\":-1}",
        "{\"block_size\":16,\"tiers\":{}}", "{\"block_size\":16,\"tiers\":[{\"num_tokens\":1}]}",
        "{\"block_size\":16,\"prefill_tokens_per_s\":\"fast\"}"}) {
    EXPECT_FALSE(parse_probe_answer(bad).is_ok()) << bad;
  }
}

TEST(ProbeRoute, TheRequestBodyRoundTrips) {
  const std::vector<BlockHash> h = block_hashes_of(std::vector<int32_t>(48, 5), 16, "s");
  ProbeRequest r;
  ASSERT_FALSE(parse_probe_request(probe_request_body(16, h), &r));
  EXPECT_EQ(r.block_size, 16);
  EXPECT_EQ(r.block_hashes, h);
}

}  // namespace
}  // namespace strata::server
