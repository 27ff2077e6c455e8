// The tiered KV cache in the engine, on the tiny peaky F32 model with chunks
// of 32 tokens: stores after compute, loads at admission (RAM, disk after a
// restart), the loading state (others keep running; aborts), metrics, and
// the threaded Engine waking up when a load finishes. Every output is
// compared token for token with a cold engine without tiers.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/engine.h"
#include "kv_tier_test_util.h"
#include "kvtier/disk_tier.h"
#include "kvtier/ram_tier.h"

namespace strata::testing {
namespace {

TEST(KvTierEngine, WritePathStoresEveryWholeChunkOnce) {
  STRATA_REQUIRE_MODEL();
  TempDir dir;
  EngineOptions o = tier_options();
  o.kv_tiers.disk_dir = dir.str();
  const GenerationRequest p = document_request(1);
  auto core = make_tier_core(o);
  ASSERT_TRUE(core);
  const auto out = serve_all(*core, {p, p});  // the second one hits the pool
  core->flush_kv_connector();
  const std::vector<int32_t> cold = cold_output(p);
  EXPECT_EQ(out[0].tokens, cold);
  EXPECT_EQ(out[1].tokens, cold);
  // 150 prompt + 15 computed output tokens: 5 whole chunks, each stored once.
  const TierStats disk = tier_stats(*core, "disk");
  EXPECT_EQ(disk.stored_chunks, 5);
  EXPECT_EQ(disk.bytes_written, 5 * static_cast<int64_t>(chunk_payload_bytes()));
  for (const ChunkKey& key : chunk_keys(peaky_model(), p.prompt_tokens, 4)) {
    EXPECT_TRUE(find_tier(*core, "disk")->contains(key)) << key.hex();
  }
}

TEST(KvTierEngine, DiskChunksServeTheSamePromptAfterARestart) {
  STRATA_REQUIRE_MODEL();
  TempDir dir;
  EngineOptions o = tier_options();
  o.kv_tiers.disk_dir = dir.str();
  const GenerationRequest p = document_request(2);
  const std::vector<int32_t> cold = cold_output(p);
  {
    auto first = make_tier_core(o);
    ASSERT_TRUE(first);
    const auto out = serve_all(*first, {p});
    EXPECT_EQ(out[0].tokens, cold);
    EXPECT_EQ(out[0].usage.num_cached_prompt_tokens, 0);
  }  // destroying the core writes what is queued
  Metrics metrics;
  auto second = make_tier_core(o, nullptr, &metrics);
  ASSERT_TRUE(second);
  const auto out = serve_all(*second, {p, canary_request()});
  EXPECT_EQ(out[0].tokens, cold);
  EXPECT_EQ(out[0].usage.num_cached_prompt_tokens, kLoadableTokens);
  EXPECT_EQ(out[1].tokens, cold_output(canary_request()));
  second->flush_kv_connector();
  const MetricsSnapshot m = metrics.snapshot();
  EXPECT_EQ(m.prompt_tokens_cached_by_tier.at("disk"), kLoadableTokens);
  EXPECT_EQ(m.kv_load_time.count, 1);
  ASSERT_EQ(m.tiers.size(), 1u);
  EXPECT_EQ(m.tiers[0].tier, "disk");
  EXPECT_EQ(m.tiers[0].hits, 4);
  EXPECT_EQ(m.tiers[0].bytes_read, 4 * static_cast<int64_t>(chunk_payload_bytes()));
  // Loaded chunks are not stored again, and the output's chunk (same tokens
  // as the first run's) is already on disk.
  EXPECT_EQ(m.tiers[0].bytes_written, 0);
  const std::string text = metrics.to_prometheus_text("m");
  EXPECT_NE(text.find("strata:prompt_tokens_cached_total{model_name=\"m\",tier=\"disk\"} 128"),
            std::string::npos)
      << text;
  // 128 of the 150 + 20 prompt tokens served came from disk.
  EXPECT_NE(text.find("strata:prompt_tokens_cached_fraction{model_name=\"m\",tier=\"disk\"} "
                      "0.7529411764705882"),
            std::string::npos);
  EXPECT_NE(text.find("strata:kv_tier_hits_total{model_name=\"m\",tier=\"disk\"} 4"),
            std::string::npos);
  EXPECT_NE(text.find("strata:kv_tier_get_latency_seconds_count{model_name=\"m\",tier=\"disk\"} 4"),
            std::string::npos);
}

TEST(KvTierEngine, RamTierRefillsAnEvictedPrefixAfterThePoolsOwnHit) {
  STRATA_REQUIRE_MODEL();
  EngineOptions o = tier_options(/*num_blocks=*/16);
  o.kv_tiers.cpu_bytes = size_t{16} << 20;
  Metrics metrics;
  auto core = make_tier_core(o, nullptr, &metrics);
  ASSERT_TRUE(core);
  const GenerationRequest p = document_request(3);
  const GenerationRequest q = document_request(4);
  serve_all(*core, {p});
  serve_all(*core, {q});  // evicts the tail of p's blocks from the 16-block pool
  const auto out = serve_all(*core, {p});
  EXPECT_EQ(out[0].tokens, cold_output(p));
  EXPECT_EQ(out[0].usage.num_cached_prompt_tokens, kLoadableTokens);
  const MetricsSnapshot m = metrics.snapshot();
  const int64_t from_ram = m.prompt_tokens_cached_by_tier.at("ram");
  const int64_t from_pool = m.prompt_tokens_cached_by_tier.at("pool");
  EXPECT_GT(from_ram, 0);
  EXPECT_GT(from_pool, 0);  // the head of p survived q in the pool
  EXPECT_EQ(from_ram + from_pool, kLoadableTokens);
  EXPECT_EQ(core->kv_cache().num_free_blocks(), core->kv_cache().num_blocks());
}

TEST(KvTierEngine, LoadingRequestWaitsWhileOthersRunThenMatchesCold) {
  STRATA_REQUIRE_MODEL();
  auto store = std::shared_ptr<KvTier>(new RamTier(size_t{16} << 20));
  auto gate = std::make_shared<Gate>();
  const GenerationRequest p = document_request(5);
  {
    auto writer =
        make_tier_core(tier_options(), manager_of(std::make_unique<GatedTier>(store, gate)));
    ASSERT_TRUE(writer);
    serve_all(*writer, {p});
    writer->flush_kv_connector();
  }
  gate->set(false);
  auto core = make_tier_core(tier_options(), manager_of(std::make_unique<GatedTier>(store, gate)));
  ASSERT_TRUE(core);
  auto loading = core->add_request(p);
  auto canary = core->add_request(canary_request());
  ASSERT_TRUE(loading.is_ok() && canary.is_ok());
  EXPECT_EQ(core->num_loading(), 1);
  std::map<int32_t, ChoiceOutput> canary_out;
  for (int i = 0; i < 1000 && !(*canary)->is_done(); ++i) {
    core->step();
    collect(**canary, &canary_out);
  }
  // The canary finished while the document's chunks were still held.
  EXPECT_EQ(canary_out[0].tokens, cold_output(canary_request()));
  EXPECT_EQ(core->num_loading(), 1);
  EXPECT_FALSE((*loading)->try_pop().has_value());
  gate->set(true);
  std::map<int32_t, ChoiceOutput> out;
  // The load finishes on the loader's thread: a count of empty steps can run
  // out before a busy machine schedules it, so the bound is time.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (core->has_unfinished_requests() && std::chrono::steady_clock::now() < deadline) {
    if (core->step().num_scheduled_tokens == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    collect(**loading, &out);
  }
  collect(**loading, &out);
  EXPECT_EQ(out[0].tokens, cold_output(p));
  EXPECT_EQ(out[0].usage.num_cached_prompt_tokens, kLoadableTokens);
}

TEST(KvTierEngine, AbortWhileLoadingFinishesTheStreamAndLeaksNothing) {
  STRATA_REQUIRE_MODEL();
  auto store = std::shared_ptr<KvTier>(new RamTier(size_t{16} << 20));
  auto gate = std::make_shared<Gate>();
  const GenerationRequest p = document_request(6);
  {
    auto writer =
        make_tier_core(tier_options(), manager_of(std::make_unique<GatedTier>(store, gate)));
    ASSERT_TRUE(writer);
    serve_all(*writer, {p});
  }
  gate->set(false);
  auto core = make_tier_core(tier_options(), manager_of(std::make_unique<GatedTier>(store, gate)));
  ASSERT_TRUE(core);
  GenerationRequest two = p;
  two.n = 2;
  auto stream = core->add_request(two);
  ASSERT_TRUE(stream.is_ok());
  ASSERT_EQ(core->num_loading(), 1);
  core->abort((*stream)->id());
  EXPECT_FALSE(core->has_unfinished_requests());
  std::map<int32_t, ChoiceOutput> out;
  collect(**stream, &out);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& [index, c] : out) {
    EXPECT_TRUE(c.is_finished);
    EXPECT_EQ(c.finish_reason, FinishReason::kAbort);
    EXPECT_TRUE(c.tokens.empty());
  }
  EXPECT_TRUE((*stream)->is_done());
  gate->set(true);  // the load finishes for nobody
  for (int i = 0; i < 20; ++i) {
    core->step();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(core->kv_cache().num_free_blocks(), core->kv_cache().num_blocks());
  EXPECT_TRUE(core->kv_cache().seq_ids().empty());
  // The engine still serves, and the aborted load left the cache usable.
  const auto again = serve_all(*core, {p});
  EXPECT_EQ(again[0].tokens, cold_output(p));
}

TEST(KvTierEngine, ThreadedEngineWakesWhenALoadFinishes) {
  STRATA_REQUIRE_MODEL();
  TempDir dir;
  EngineOptions o = tier_options();
  o.kv_tiers.disk_dir = dir.str();
  const GenerationRequest p = document_request(7);
  auto run = [&](int64_t* cached) {
    Result<std::unique_ptr<Engine>> engine =
        Engine::create(*peaky_model().weights, *peaky_model().tokenizer, o);
    EXPECT_TRUE(engine.is_ok()) << engine.status().message();
    if (!engine) return std::vector<int32_t>{};
    auto stream = (*engine)->add_request(p);
    EXPECT_TRUE(stream.is_ok());
    std::vector<int32_t> tokens;
    while (auto e = (*stream)->pop_for(std::chrono::seconds(60))) {
      tokens.insert(tokens.end(), e->token_ids.begin(), e->token_ids.end());
      if (e->is_final) *cached = e->usage.num_cached_prompt_tokens;
      if ((*stream)->is_done()) break;
    }
    return tokens;
  };
  int64_t cached = -1;
  const std::vector<int32_t> first = run(&cached);
  EXPECT_EQ(cached, 0);
  const std::vector<int32_t> second = run(&cached);  // only the loading request: the loop sleeps
  EXPECT_EQ(cached, kLoadableTokens);
  EXPECT_EQ(first, cold_output(p));
  EXPECT_EQ(second, first);
}

TEST(KvTierEngine, SaltedPromptsShareNoChunks) {
  STRATA_REQUIRE_MODEL();
  TempDir dir;
  EngineOptions o = tier_options();
  o.kv_tiers.disk_dir = dir.str();
  GenerationRequest a = document_request(8);
  a.cache_salt = "tenant-a";
  GenerationRequest b = a;
  b.cache_salt = "tenant-b";
  {
    auto core = make_tier_core(o);
    ASSERT_TRUE(core);
    serve_all(*core, {a});
  }
  auto core = make_tier_core(o);
  ASSERT_TRUE(core);
  const auto out = serve_all(*core, {b});
  EXPECT_EQ(out[0].usage.num_cached_prompt_tokens, 0);
  EXPECT_EQ(out[0].tokens, cold_output(b));
  const auto again = serve_all(*make_tier_core(o), {a});
  EXPECT_EQ(again[0].usage.num_cached_prompt_tokens, kLoadableTokens);
}

}  // namespace
}  // namespace strata::testing
