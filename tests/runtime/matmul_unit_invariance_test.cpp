// Batch invariance across matmul units: a model whose matmul weights are
// Q8_0 / Q4_0 (crafted) or Q4_K / Q6_K / Q4_K_M (the generated test models)
// gives the same logits, bit for bit, and so the same greedy tokens,
// whether its steps run on the AMX tile kernels or the AVX-512 VNNI kernels
// (kernels/matmul_unit.h). Skipped without AMX.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "../model/crafted_model.h"
#include "kernels/amx_support.h"
#include "kernels/matmul_unit.h"
#include "model/model_weights.h"
#include "runtime/forward_batch.h"
#include "runtime/kv_storage.h"
#include "runtime/model_runner.h"

namespace strata {
namespace {

constexpr int kBlockSize = 4;

struct UnitRun {
  std::vector<float> prefill_logits;  // every prompt position
  std::vector<int32_t> greedy;        // tokens decoded after the prompt
};

// Prefills a 40-token prompt in one step (AMX-sized), then decodes greedily.
UnitRun run(const ModelWeights& weights, AmxMode mode) {
  const ModelWeights* w = &weights;
  const AmxMode previous = amx_mode();
  set_amx_mode(mode);
  Result<KvStorage> kv = KvStorage::create(w->config(), kBlockSize, 16);
  EXPECT_TRUE(kv.is_ok()) << kv.status().message();
  ThreadPool pool(2);
  ModelRunner runner(weights, *kv, pool, 48);
  const int64_t vocab = w->config().vocab_size;
  const auto token = [&](int p) {
    return static_cast<int32_t>((p * 7 + 3) % std::min<int64_t>(40, vocab));
  };
  std::vector<int32_t> table(16);
  for (int i = 0; i < 16; ++i) table[i] = i;
  UnitRun out;
  ForwardBatch b;
  b.block_tables = {table};
  const int prompt = 40;
  for (int p = 0; p < prompt; ++p) b.add_token(token(p), p, 0, kBlockSize, true);
  out.prefill_logits.resize(static_cast<size_t>(prompt * vocab));
  Status st = runner.forward(b, out.prefill_logits.data());
  EXPECT_TRUE(st.is_ok()) << st.message();
  const float* last = out.prefill_logits.data() + (prompt - 1) * vocab;
  int32_t tok = static_cast<int32_t>(std::max_element(last, last + vocab) - last);
  std::vector<float> logits(vocab);
  for (int step = 0; step < 8; ++step) {
    out.greedy.push_back(tok);
    ForwardBatch d;
    d.block_tables = {table};
    d.add_token(tok, prompt + step, 0, kBlockSize, true);
    st = runner.forward(d, logits.data());
    EXPECT_TRUE(st.is_ok()) << st.message();
    tok = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  }
  set_amx_mode(previous);
  return out;
}

// The crafted model's bytes with every matmul weight but the embedding in
// `type` (the weights view them).
std::vector<uint8_t> crafted_bytes(DType type) {
  Crafted c("llama");
  c.is_random = true;
  for (const auto& [name, ne] : c.tensor_ne) {
    if (ne.size() == 2 && name != "token_embd.weight") c.tensor_type[name] = type;
  }
  return c.build();
}

void expect_same(const UnitRun& vnni, const UnitRun& amx) {
  ASSERT_EQ(vnni.prefill_logits.size(), amx.prefill_logits.size());
  for (size_t i = 0; i < vnni.prefill_logits.size(); ++i) {
    ASSERT_EQ(vnni.prefill_logits[i], amx.prefill_logits[i]) << i;
  }
  EXPECT_EQ(vnni.greedy, amx.greedy);
}

TEST(MatmulUnitInvariance, AmxAndVnniStepsGiveTheSameLogitsAndTokens) {
  if (!amx_support().usable()) GTEST_SKIP() << "no AMX: " << amx_support().reason();
  for (DType type : {DType::kQ8_0, DType::kQ4_0}) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    const std::vector<uint8_t> bytes = crafted_bytes(type);
    Result<GgufFile> file = GgufFile::parse(bytes.data(), bytes.size());
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    Result<ModelWeights> w = ModelWeights::load(std::move(*file));
    ASSERT_TRUE(w.is_ok()) << w.status().message();
    expect_same(run(*w, AmxMode::kOff), run(*w, AmxMode::kForced));
  }
}

// Q4_K / Q6_K need rows of 256: the generated models (hidden 256, ffn 512).
TEST(MatmulUnitInvariance, KQuantModelsGiveTheSameLogitsAndTokensOnEitherUnit) {
  if (!amx_support().usable()) GTEST_SKIP() << "no AMX: " << amx_support().reason();
  for (const char* name : {"llama-q4_k", "llama-q6_k", "llama-q4_k_m"}) {
    SCOPED_TRACE(name);
    const std::string path = std::string(STRATA_BINARY_DIR) + "/models/" + name + ".gguf";
    Result<ModelWeights> w = ModelWeights::open(path);
    ASSERT_TRUE(w.is_ok()) << w.status().message() << " (run scripts/make-models.sh "
                           << STRATA_BINARY_DIR << ")";
    expect_same(run(*w, AmxMode::kOff), run(*w, AmxMode::kForced));
  }
}

}  // namespace
}  // namespace strata
