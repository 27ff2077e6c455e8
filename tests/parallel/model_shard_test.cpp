// ModelWeights::load_shard on the generated models, in one process: the
// column-parallel shards are the whole weight's rows, the row-parallel
// shards' partial products add up to the whole product, the vocabulary and
// layer ranges tile the model, and shapes that do not split are one-line
// errors naming the flag.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kernels/matmul.h"
#include "model/model_weights.h"
#include "util/thread_pool.h"

namespace strata {
namespace {

std::string model_path(const std::string& name) {
  return std::string(STRATA_BINARY_DIR) + "/models/" + name + ".gguf";
}

ParallelLayout layout(int t, int p, int rank) {
  ParallelLayout l;
  l.tensor_parallel_size = t;
  l.pipeline_parallel_size = p;
  l.rank = rank;
  return l;
}

Result<ModelWeights> shard_of(const std::string& name, const ParallelLayout& l) {
  Result<GgufFile> file = GgufFile::open(model_path(name));
  if (!file) return file.status();
  return ModelWeights::load_shard(std::move(*file), l);
}

std::vector<float> product(const WeightView& w, const std::vector<float>& x, int64_t n) {
  ThreadPool pool(1);
  std::vector<float> y(static_cast<size_t>(n * w.rows));
  matmul(w, x.data(), n, y.data(), pool);
  return y;
}

TEST(ModelShard, PartialProductsAddUpToTheWhole) {
  for (const char* name : {"llama-f32", "qwen2-q8_0", "qwen3-f16"}) {
    Result<ModelWeights> whole = ModelWeights::open(model_path(name));
    ASSERT_TRUE(whole.is_ok()) << name << ": " << whole.status().message();
    const ModelConfig& c = whole->config();
    Result<ModelWeights> s0 = shard_of(name, layout(2, 1, 0));
    Result<ModelWeights> s1 = shard_of(name, layout(2, 1, 1));
    ASSERT_TRUE(s0.is_ok() && s1.is_ok()) << name;
    EXPECT_EQ(s0->local_config().num_heads * 2, c.num_heads);
    EXPECT_EQ(s1->local_config().num_kv_heads * 2, c.num_kv_heads);
    EXPECT_EQ(s0->local_config().ffn_dim * 2, c.ffn_dim);
    EXPECT_EQ(s0->vocab_end(), s1->vocab_begin());
    EXPECT_EQ(s1->vocab_end(), c.vocab_size);

    const int64_t n = 3;
    // Q: shard rows are the whole weight's rows, shard order.
    std::vector<float> x(static_cast<size_t>(n * c.hidden_dim));
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
    const std::vector<float> q = product(whole->layers()[1].attn_q, x, n);
    const std::vector<float> q1 = product(s1->layers()[1].attn_q, x, n);
    const int64_t half = c.q_dim() / 2;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t j = 0; j < half; ++j) {
        EXPECT_EQ(q1[t * half + j], q[t * c.q_dim() + half + j]) << name;
      }
    }
    // Down: the shards' partial sums add up to the whole (fp32 order aside).
    const int64_t ffn = c.ffn_dim, hf = ffn / 2;
    std::vector<float> h(static_cast<size_t>(n * ffn)), h0(n * hf), h1(n * hf);
    for (size_t i = 0; i < h.size(); ++i) h[i] = std::cos(0.11f * static_cast<float>(i));
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t j = 0; j < hf; ++j) {
        h0[t * hf + j] = h[t * ffn + j];
        h1[t * hf + j] = h[t * ffn + hf + j];
      }
    }
    const std::vector<float> y = product(whole->layers()[0].ffn_down, h, n);
    const std::vector<float> y0 = product(s0->layers()[0].ffn_down, h0, n);
    const std::vector<float> y1 = product(s1->layers()[0].ffn_down, h1, n);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_NEAR(y0[i] + y1[i], y[i], 1e-4 * (1.0 + std::fabs(y[i]))) << name << " " << i;
    }
  }
}

TEST(ModelShard, StagesTakeContiguousLayers) {
  Result<ModelWeights> s0 = shard_of("llama-q8_0", layout(1, 2, 0));
  Result<ModelWeights> s1 = shard_of("llama-q8_0", layout(1, 2, 1));
  ASSERT_TRUE(s0.is_ok() && s1.is_ok());
  EXPECT_EQ(s0->first_layer(), 0);
  EXPECT_EQ(s0->layers().size(), 1u);
  EXPECT_EQ(s1->first_layer(), 1);
  EXPECT_EQ(s1->local_config().num_layers, 1);
  EXPECT_EQ(s1->config().num_layers, 2);
}

TEST(ModelShard, ShapesThatDoNotSplitAreOneLineErrors) {
  // 4 heads do not split 8 ways; q4_K's 256-element blocks do not split a
  // 256-wide attention output in two.
  Result<ModelWeights> heads = shard_of("llama-f32", layout(8, 1, 0));
  ASSERT_FALSE(heads.is_ok());
  EXPECT_EQ(heads.status().message(),
            "model: the attention head count (4) is not divisible by --tensor-parallel-size 8");
  Result<ModelWeights> blocks = shard_of("llama-q4_k", layout(2, 1, 0));
  ASSERT_FALSE(blocks.is_ok());
  EXPECT_NE(blocks.status().message().find("not whole blocks of 256"), std::string::npos);
  Result<ModelWeights> stages = shard_of("llama-f32", layout(1, 3, 0));
  ASSERT_FALSE(stages.is_ok());
  EXPECT_NE(stages.status().message().find("--pipeline-parallel-size"), std::string::npos);
}

}  // namespace
}  // namespace strata
