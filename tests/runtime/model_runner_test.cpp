// KvStorage sizing and ModelRunner batch handling on a small crafted model:
// invalid batches are rejected before the cache is touched, and a sequence's
// logits do not depend on what else is in the batch or where its blocks are.
#include "runtime/model_runner.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../model/crafted_model.h"
#include "model/model_weights.h"
#include "runtime/forward_batch.h"
#include "runtime/kv_storage.h"

namespace strata {
namespace {

constexpr int kRunnerBlockSize = 4;  // small, so short sequences span several blocks

struct Fixture {
  std::vector<uint8_t> bytes;
  std::unique_ptr<ModelWeights> weights;
  std::unique_ptr<KvStorage> kv;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<ModelRunner> runner;

  explicit Fixture(const std::string& arch, int num_threads = 2) {
    Crafted c(arch);
    c.is_random = true;
    bytes = c.build();
    Result<GgufFile> file = GgufFile::parse(bytes.data(), bytes.size());
    EXPECT_TRUE(file.is_ok()) << file.status().message();
    Result<ModelWeights> w = ModelWeights::load(std::move(*file));
    EXPECT_TRUE(w.is_ok()) << w.status().message();
    weights = std::make_unique<ModelWeights>(std::move(*w));
    Result<KvStorage> k = KvStorage::create(weights->config(), kRunnerBlockSize, 16);
    EXPECT_TRUE(k.is_ok()) << k.status().message();
    kv = std::make_unique<KvStorage>(std::move(*k));
    pool = std::make_unique<ThreadPool>(num_threads);
    runner = std::make_unique<ModelRunner>(*weights, *kv, *pool, 32);
  }
  int64_t vocab() const { return weights->config().vocab_size; }
};

const std::vector<int32_t> kTokens = {5, 17, 3, 39, 22, 8, 0, 31, 12, 27, 9};

// Logits of every position of kTokens run as one sequence with `table`.
std::vector<float> run_alone(Fixture& f, const std::vector<int32_t>& table) {
  ForwardBatch b;
  b.block_tables = {table};
  for (size_t i = 0; i < kTokens.size(); ++i) {
    b.add_token(kTokens[i], static_cast<int32_t>(i), 0, kRunnerBlockSize, true);
  }
  std::vector<float> logits(kTokens.size() * f.vocab());
  const Status st = f.runner->forward(b, logits.data());
  EXPECT_TRUE(st.is_ok()) << st.message();
  return logits;
}

TEST(KvStorage, SizesFromBudgetAndBlocks) {
  Crafted c("llama");
  const std::vector<uint8_t> bytes = c.build();
  Result<GgufFile> file = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(file.is_ok());
  Result<ModelConfig> cfg = ModelConfig::from_gguf(*file);
  ASSERT_TRUE(cfg.is_ok());
  // 2 layers x (K + V) x 16 tokens x 32 (2 kv heads x 16) x 2 bytes.
  EXPECT_EQ(KvStorage::bytes_per_block(*cfg, 16), 2u * 2 * 16 * 32 * 2);
  Result<KvStorage> kv = KvStorage::create_for_budget(*cfg, 16, 10 * 4096 + 100);
  ASSERT_TRUE(kv.is_ok()) << kv.status().message();
  EXPECT_EQ(kv->num_blocks(), 10);
  EXPECT_EQ(kv->total_bytes(), 10u * 4096);
  const KvLayerView v = kv->layer(1);
  EXPECT_EQ(v.num_blocks, 10);
  EXPECT_EQ(v.block_size, 16);
  EXPECT_EQ(v.n_kv_heads, 2);
  EXPECT_EQ(v.head_dim, 16);
  EXPECT_NE(v.k, kv->layer(0).k);

  Result<KvStorage> tiny = KvStorage::create_for_budget(*cfg, 16, 4095);
  ASSERT_FALSE(tiny.is_ok());
  EXPECT_NE(tiny.status().message().find("--kv-cache-memory"), std::string::npos);
  EXPECT_FALSE(KvStorage::create(*cfg, 0, 4).is_ok());
  EXPECT_FALSE(KvStorage::create(*cfg, 16, 0).is_ok());
}

TEST(ModelRunner, RejectsInvalidBatchesWithoutTouchingTheCache) {
  Fixture f("llama");
  const KvLayerView layer0 = f.kv->layer(0);
  const size_t pool_elems = static_cast<size_t>(layer0.num_blocks) * kRunnerBlockSize *
                            layer0.n_kv_heads * layer0.head_dim;
  std::vector<float> logits(64 * f.vocab());
  auto expect_error = [&](const ForwardBatch& b, const std::string& fragment) {
    const std::vector<uint16_t> before(layer0.k, layer0.k + pool_elems);
    const Status st = f.runner->forward(b, logits.data());
    ASSERT_FALSE(st.is_ok()) << fragment;
    EXPECT_NE(st.message().find(fragment), std::string::npos) << st.message();
    EXPECT_EQ(0, std::memcmp(before.data(), layer0.k, pool_elems * sizeof(uint16_t)));
  };
  auto good = [] {
    ForwardBatch b;
    b.block_tables = {{3, 7}};
    b.add_token(5, 0, 0, kRunnerBlockSize, false);
    b.add_token(6, 1, 0, kRunnerBlockSize, true);
    return b;
  };
  expect_error(ForwardBatch(), "empty batch");
  ForwardBatch b = good();
  b.tokens[1] = 40;
  expect_error(b, "token id 40 out of range [0, 40) at batch row 1");
  b = good();
  b.positions[1] = 8;  // block 2 of a 2-block table
  expect_error(b, "position 8 is not covered by the block table of sequence 0");
  b = good();
  b.slot_mapping[0] = 16 * kRunnerBlockSize;
  expect_error(b, "slot 64 out of range at batch row 0");
  b = good();
  b.block_tables[0][1] = 16;
  expect_error(b, "block id 16 out of range [0, 16)");
  b = good();
  b.seq_index[0] = 1;
  expect_error(b, "seq_index 1 out of range at batch row 0");
  b = good();
  b.logits_indices = {2};
  expect_error(b, "logits index 2 out of range");
  b = good();
  b.positions.pop_back();
  expect_error(b, "differ in size");
  b = ForwardBatch();
  b.block_tables = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}};
  for (int i = 0; i < 33; ++i) b.add_token(1, i, 0, kRunnerBlockSize, false);
  expect_error(b, "batch of 33 tokens exceeds max_batch_tokens = 32");
}

// The same sequence alone with contiguous blocks, alone with scattered
// blocks, and as a decode stream interleaved with another sequence's
// prefill: identical logits up to matmul's batch-size-dependent rounding.
TEST(ModelRunner, LogitsDoNotDependOnBatchOrBlocks) {
  for (const char* arch : {"llama", "qwen2", "qwen3"}) {
    SCOPED_TRACE(arch);
    Fixture f(arch);
    const std::vector<float> base = run_alone(f, {0, 1, 2});
    const std::vector<float> scattered = run_alone(f, {13, 4, 9});
    ASSERT_EQ(base.size(), scattered.size());
    for (size_t i = 0; i < base.size(); ++i) EXPECT_NEAR(base[i], scattered[i], 1e-5f) << i;

    // Sequence 1 decodes kTokens one by one while sequence 0 prefills a
    // different prompt in two chunks in the same batches.
    const std::vector<std::vector<int32_t>> tables = {{10, 11, 12}, {7, 2, 15}};
    const std::vector<int32_t> other = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    for (size_t step = 0; step < kTokens.size(); ++step) {
      ForwardBatch b;
      b.block_tables = tables;
      if (step < 2) {
        const size_t begin = step == 0 ? 0 : 5, end = step == 0 ? 5 : other.size();
        for (size_t p = begin; p < end; ++p) {
          b.add_token(other[p], static_cast<int32_t>(p), 0, kRunnerBlockSize, false);
        }
      }
      b.add_token(kTokens[step], static_cast<int32_t>(step), 1, kRunnerBlockSize, true);
      std::vector<float> logits(f.vocab());
      const Status st = f.runner->forward(b, logits.data());
      ASSERT_TRUE(st.is_ok()) << st.message();
      for (int64_t v = 0; v < f.vocab(); ++v) {
        EXPECT_NEAR(logits[v], base[step * f.vocab() + v], 1e-4f) << "step " << step;
      }
    }
  }
}

TEST(ModelRunner, ThreadCountDoesNotChangeLogits) {
  Fixture one("qwen3", 1);
  Fixture two("qwen3", 2);
  const std::vector<float> a = run_alone(one, {0, 1, 2});
  const std::vector<float> b = run_alone(two, {0, 1, 2});
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5f) << i;
}

TEST(ModelRunner, LogitsAreFiniteAndVary) {
  Fixture f("qwen2");
  const std::vector<float> logits = run_alone(f, {0, 1, 2});
  float lo = logits[0], hi = logits[0];
  for (float v : logits) {
    ASSERT_TRUE(std::isfinite(v));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  EXPECT_GT(hi - lo, 1e-3f);
}

// The profile counts every phase's work exactly (hidden 64, q 64, kv 32,
// ffn 96, vocab 40, 2 layers, 4 heads of 16; F32 weights) and, with
// ceilings, files each record under the bound that sets its floor.
TEST(ModelRunner, ProfileCountsEachPhasesWorkAndItsRooflineBound) {
  Fixture f("llama");
  // 1 GFLOP/s and 1 GB/s: a matmul's 2 ops per 4-byte weight make the
  // one-token pass memory bound, eleven tokens (22 ops per weight) compute
  // bound.
  MachineCeilings ceilings;
  ceilings.read_bw_gbs = 1;
  ceilings.fp32_gflops = 1;
  ceilings.int8_gops = 1;
  f.runner->profile().set_ceilings(ceilings);
  run_alone(f, {0, 1, 2});
  const ForwardProfileTotals prefill = f.runner->profile().take();
  const double n = 11, layers = 2;
  const PhaseTotals qkv = prefill.phase(ForwardPhase::kQkvProj);
  EXPECT_EQ(qkv.calls, 2);
  EXPECT_DOUBLE_EQ(qkv.ops, layers * 2 * n * 64 * (64 + 32 + 32));
  EXPECT_DOUBLE_EQ(qkv.bytes, layers * ((64 + 32 + 32) * 64 * 4 + 4 * n * (3 * 64 + 64 + 32 + 32)));
  EXPECT_DOUBLE_EQ(prefill.phase(ForwardPhase::kGateUpProj).ops, layers * 2 * n * 64 * 96 * 2);
  EXPECT_DOUBLE_EQ(prefill.phase(ForwardPhase::kDownProj).ops, layers * 2 * n * 96 * 64);
  EXPECT_DOUBLE_EQ(prefill.phase(ForwardPhase::kOProj).ops, layers * 2 * n * 64 * 64);
  // Every position samples here (run_alone asks for all logits).
  EXPECT_DOUBLE_EQ(prefill.phase(ForwardPhase::kLmHead).ops, 2 * n * 64 * 40);
  // Attention: 4 ops per head dim per causal position, 1 + 2 + ... + 11.
  EXPECT_DOUBLE_EQ(prefill.phase(ForwardPhase::kAttention).ops, layers * 4 * 4 * 16 * 66);
  EXPECT_EQ(prefill.phase(ForwardPhase::kExchange).calls, 0);  // one process
  for (ForwardPhase p :
       {ForwardPhase::kQkvProj, ForwardPhase::kGateUpProj, ForwardPhase::kDownProj}) {
    const PhaseTotals& c = prefill.at(p, RooflineBound::kCompute);
    EXPECT_EQ(c.calls, 2) << forward_phase_name(p);
    EXPECT_DOUBLE_EQ(c.floor_seconds, c.ops / 1e9) << forward_phase_name(p);
    EXPECT_GT(c.seconds, 0);
  }
  EXPECT_GT(prefill.at(ForwardPhase::kElementwise, RooflineBound::kMemory).calls, 0);
  EXPECT_EQ(prefill.at(ForwardPhase::kElementwise, RooflineBound::kCompute).calls, 0);
  // The phases cover the pass lap to lap: their sum is its wall time.
  EXPECT_GT(prefill.total().seconds, 0);

  // One more token of the same sequence: a decode step, memory bound.
  ForwardBatch b;
  b.block_tables = {{0, 1, 2}};
  b.add_token(4, static_cast<int32_t>(kTokens.size()), 0, kRunnerBlockSize, true);
  std::vector<float> logits(f.vocab());
  ASSERT_TRUE(f.runner->forward(b, logits.data()).is_ok());
  const ForwardProfileTotals decode = f.runner->profile().take();
  const PhaseTotals& m = decode.at(ForwardPhase::kGateUpProj, RooflineBound::kMemory);
  EXPECT_EQ(m.calls, 2);
  EXPECT_EQ(decode.at(ForwardPhase::kGateUpProj, RooflineBound::kCompute).calls, 0);
  EXPECT_DOUBLE_EQ(m.floor_seconds, m.bytes / 1e9);
  EXPECT_DOUBLE_EQ(decode.phase(ForwardPhase::kAttention).ops, layers * 4 * 4 * 16 * 12);
  // take() started over.
  EXPECT_TRUE(f.runner->profile().take().empty());
}

}  // namespace
}  // namespace strata
