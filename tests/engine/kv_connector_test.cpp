// One conformance suite for every KvConnector: whatever holds the KV, an
// engine that uses it serves every request exactly as a cold engine would,
// reuses what it can, and leaks nothing. Run against an in-memory fake
// (block-granular) and the tiered cache (RAM tier, 32-token chunks), each
// sharing its store across engines.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "engine/tiered_kv_connector.h"
#include "fake_kv_connector.h"
#include "kv_tier_test_util.h"
#include "kvtier/ram_tier.h"

namespace strata::testing {
namespace {

// A store that outlives engines, and the connectors that reach it.
class Store {
 public:
  virtual ~Store() = default;
  virtual std::unique_ptr<KvConnector> connect(const EngineOptions& options) = 0;
  // While held, started loads do not complete.
  virtual void hold_loads(bool hold) = 0;
  // Prompt tokens of a 150-token prompt this connector can supply once stored.
  virtual int64_t loadable_tokens() const = 0;
};

class FakeStore final : public Store {
 public:
  std::unique_ptr<KvConnector> connect(const EngineOptions& o) override {
    return std::make_unique<FakeKvConnector>(shared, o.block_size);
  }
  void hold_loads(bool hold) override { shared->hold_loads = hold; }
  int64_t loadable_tokens() const override { return 144; }  // 9 whole blocks before the last token
  std::shared_ptr<FakeKvConnector::Shared> shared = std::make_shared<FakeKvConnector::Shared>();
};

class TieredStore final : public Store {
 public:
  std::unique_ptr<KvConnector> connect(const EngineOptions& o) override {
    Result<std::unique_ptr<TieredKvConnector>> c = TieredKvConnector::create(
        *peaky_model().weights, o.block_size, o.kv_tiers,
        manager_of(std::make_unique<GatedTier>(ram, gate)), nullptr, nullptr);
    EXPECT_TRUE(c.is_ok()) << c.status().message();
    return c ? std::move(*c) : nullptr;
  }
  void hold_loads(bool hold) override { gate->set(!hold); }
  int64_t loadable_tokens() const override { return kLoadableTokens; }  // 4 chunks of 32
  std::shared_ptr<KvTier> ram = std::make_shared<RamTier>(size_t{64} << 20);
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
};

std::unique_ptr<EngineCore> engine_on(Store& store, int64_t num_blocks = 64) {
  const EngineOptions o = tier_options(num_blocks);
  Result<std::unique_ptr<EngineCore>> core = EngineCore::create(
      *peaky_model().weights, *peaky_model().tokenizer, o, nullptr, nullptr, store.connect(o));
  EXPECT_TRUE(core.is_ok()) << core.status().message();
  return core ? std::move(*core) : nullptr;
}

struct Kind {
  std::string name;
  std::function<std::unique_ptr<Store>()> make;
};

void PrintTo(const Kind& kind, std::ostream* os) {
  *os << kind.name;
}

class KvConnectorConformance : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    STRATA_REQUIRE_MODEL();
    store = GetParam().make();
  }
  std::unique_ptr<EngineCore> engine(int64_t num_blocks = 64) {
    return engine_on(*store, num_blocks);
  }
  static void expect_no_leak(EngineCore& core) {
    EXPECT_EQ(core.kv_cache().num_free_blocks(), core.kv_cache().num_blocks());
    EXPECT_FALSE(core.has_unfinished_requests());
    EXPECT_EQ(core.executor().num_samplers(), 0u);
  }
  std::unique_ptr<Store> store;
};

TEST_P(KvConnectorConformance, AColdStoreChangesNothing) {
  auto core = engine();
  const GenerationRequest p = document_request(1);
  const auto out = serve_all(*core, {p});
  EXPECT_EQ(out[0].tokens, cold_output(p));
  EXPECT_EQ(out[0].usage.num_cached_prompt_tokens, 0);
  expect_no_leak(*core);
}

TEST_P(KvConnectorConformance, WhatOneEngineSavedAnotherLoads) {
  const GenerationRequest p = document_request(2);
  {
    auto first = engine();
    serve_all(*first, {p});
    first->flush_kv_connector();
  }
  auto second = engine();  // an empty pool: everything comes from the store
  const auto out = serve_all(*second, {p, canary_request()});
  EXPECT_EQ(out[0].tokens, cold_output(p));
  EXPECT_EQ(out[0].usage.num_cached_prompt_tokens, store->loadable_tokens());
  EXPECT_EQ(out[1].tokens, cold_output(canary_request()));
  expect_no_leak(*second);
}

TEST_P(KvConnectorConformance, APartialPoolHitIsExtendedNotEvicted) {
  auto core = engine(/*num_blocks=*/16);
  const GenerationRequest p = document_request(3);
  const GenerationRequest q = document_request(4);
  serve_all(*core, {p});
  serve_all(*core, {q});  // evicts the tail of p's blocks, keeps its head
  core->flush_kv_connector();
  const auto out = serve_all(*core, {p});
  EXPECT_EQ(out[0].tokens, cold_output(p));
  EXPECT_EQ(out[0].usage.num_cached_prompt_tokens, store->loadable_tokens());
  expect_no_leak(*core);
}

TEST_P(KvConnectorConformance, AbortWhileLoadingLeaksNothing) {
  const GenerationRequest p = document_request(5);
  {
    auto first = engine();
    serve_all(*first, {p});
    first->flush_kv_connector();
  }
  auto core = engine();
  store->hold_loads(true);
  Result<std::shared_ptr<RequestStream>> s = core->add_request(p);
  ASSERT_TRUE(s.is_ok());
  ASSERT_EQ(core->num_loading(), 1);
  // Others run meanwhile.
  Result<std::shared_ptr<RequestStream>> canary = core->add_request(canary_request());
  ASSERT_TRUE(canary.is_ok());
  for (int i = 0; i < 1000 && !(*canary)->is_closed(); ++i) core->step();
  std::map<int32_t, ChoiceOutput> canary_out;
  collect(**canary, &canary_out);
  EXPECT_EQ(canary_out[0].tokens, cold_output(canary_request()));
  EXPECT_EQ(core->num_loading(), 1);
  core->abort((*s)->id());
  store->hold_loads(false);
  for (int i = 0; i < 100 && core->has_unfinished_requests(); ++i) core->step();
  std::map<int32_t, ChoiceOutput> got;
  collect(**s, &got);
  ASSERT_TRUE(got.at(0).is_finished);
  EXPECT_EQ(got.at(0).finish_reason, FinishReason::kAbort);
  EXPECT_EQ(core->num_loading(), 0);
  expect_no_leak(*core);
}

TEST_P(KvConnectorConformance, ParallelChoicesShareOneLoad) {
  const GenerationRequest p = document_request(6);
  {
    auto first = engine();
    serve_all(*first, {p});
    first->flush_kv_connector();
  }
  auto core = engine();
  GenerationRequest three = p;
  three.n = 3;
  auto out = run_to_completion(*core, {three});
  for (int32_t i = 0; i < 3; ++i) EXPECT_EQ(out[0].at(i).tokens, cold_output(p)) << i;
  EXPECT_EQ(out[0].at(0).usage.num_cached_prompt_tokens, store->loadable_tokens());
  expect_no_leak(*core);
}

INSTANTIATE_TEST_SUITE_P(
    AllConnectors, KvConnectorConformance,
    ::testing::Values(Kind{"fake", [] { return std::make_unique<FakeStore>(); }},
                      Kind{"tiered", [] { return std::make_unique<TieredStore>(); }}),
    [](const ::testing::TestParamInfo<Kind>& info) { return info.param.name; });

// What only the fake can show.

TEST(FakeKvConnector, AShortLoadIsComputedAndEveryRequestIsReportedFinished) {
  STRATA_REQUIRE_MODEL();
  FakeStore store;
  const GenerationRequest p = document_request(7);
  serve_all(*engine_on(store), {p});
  store.shared->max_blocks_per_load = 3;  // the connector fails after 3 blocks
  auto core = engine_on(store);
  store.shared->finished.clear();
  const auto out = serve_all(*core, {p, canary_request()});
  EXPECT_EQ(out[0].tokens, cold_output(p));
  EXPECT_EQ(out[0].usage.num_cached_prompt_tokens, 3 * 16);
  EXPECT_EQ(store.shared->num_blocks_loaded, 3);
  EXPECT_EQ(store.shared->finished.size(), 2u);
  EXPECT_EQ(core->kv_cache().num_free_blocks(), core->kv_cache().num_blocks());
}

}  // namespace
}  // namespace strata::testing
