// ModelConfig::from_gguf on files crafted with GgufWriter: a valid file per
// architecture, then one defect at a time, each with its exact message.
#include "model/model_config.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "crafted_model.h"
#include "gguf/gguf_writer.h"
#include "kernels/quant.h"
#include "model/model_weights.h"

namespace strata {
namespace {

// Parses the crafted bytes (kept alive in `bytes`) and reads the config.
Result<ModelConfig> config_of(const Crafted& c, std::vector<uint8_t>& bytes) {
  bytes = c.build();
  Result<GgufFile> file = GgufFile::parse(bytes.data(), bytes.size());
  EXPECT_TRUE(file.is_ok()) << file.status().message();
  if (!file.is_ok()) return file.status();
  return ModelConfig::from_gguf(*file);
}

std::string error_of(const Crafted& c) {
  std::vector<uint8_t> bytes;
  Result<ModelConfig> r = config_of(c, bytes);
  EXPECT_FALSE(r.is_ok());
  return r.is_ok() ? "" : r.status().message();
}

TEST(ModelConfig, ReadsValidLlama) {
  std::vector<uint8_t> bytes;
  Result<ModelConfig> r = config_of(Crafted("llama"), bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->arch, Architecture::kLlama);
  EXPECT_EQ(r->hidden_dim, 64);
  EXPECT_EQ(r->num_layers, 2);
  EXPECT_EQ(r->ffn_dim, 96);
  EXPECT_EQ(r->num_heads, 4);
  EXPECT_EQ(r->num_kv_heads, 2);
  EXPECT_EQ(r->head_dim, 16);
  EXPECT_EQ(r->rope_dim, 16);
  EXPECT_EQ(r->vocab_size, 40);
  EXPECT_EQ(r->context_length, 128);
  EXPECT_FLOAT_EQ(r->rms_norm_eps, 1e-6f);
  EXPECT_EQ(r->rope_style, RopeStyle::kNormal);
  EXPECT_FLOAT_EQ(r->rope_freq_scale, 1.0f);
  EXPECT_FALSE(r->has_qkv_bias);
  EXPECT_FALSE(r->has_qk_norm);
  EXPECT_FALSE(r->is_output_tied);
}

TEST(ModelConfig, Qwen2HasBiasesAndNeox) {
  std::vector<uint8_t> bytes;
  Result<ModelConfig> r = config_of(Crafted("qwen2"), bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->has_qkv_bias);
  EXPECT_EQ(r->rope_style, RopeStyle::kNeox);
}

TEST(ModelConfig, Qwen3HeadDimFromKeyLengthAndTiedOutput) {
  Crafted c("qwen3");
  // head_dim 24 != 64 / 4: q is [64, 96], kv [64, 48], attn_output [96, 64].
  c.u32["qwen3.attention.key_length"] = 24;
  c.u32["qwen3.attention.value_length"] = 24;
  c.has_output = false;
  for (int il = 0; il < 2; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    c.tensor_ne[b + "attn_q.weight"] = {64, 96};
    c.tensor_ne[b + "attn_k.weight"] = {64, 48};
    c.tensor_ne[b + "attn_v.weight"] = {64, 48};
    c.tensor_ne[b + "attn_output.weight"] = {96, 64};
    c.tensor_ne[b + "attn_q_norm.weight"] = {24};
    c.tensor_ne[b + "attn_k_norm.weight"] = {24};
  }
  std::vector<uint8_t> bytes;
  Result<ModelConfig> r = config_of(c, bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->head_dim, 24);
  EXPECT_EQ(r->q_dim(), 96);
  EXPECT_EQ(r->kv_dim(), 48);
  EXPECT_TRUE(r->has_qk_norm);
  EXPECT_TRUE(r->is_output_tied);
  EXPECT_EQ(r->rope_style, RopeStyle::kNeox);
}

TEST(ModelConfig, WrongKvShapeNamesTensorAndHparams) {
  Crafted c("llama");
  c.tensor_ne["blk.1.attn_k.weight"] = {64, 64};
  EXPECT_EQ(error_of(c),
            "model: blk.1.attn_k.weight has shape [64, 64], expected [64, 32] "
            "(embedding_length=64, head_count_kv=2, head_dim=16)");
}

TEST(ModelConfig, MissingKey) {
  Crafted c("llama");
  c.u32.erase("llama.block_count");
  EXPECT_EQ(error_of(c), "model: missing metadata key 'llama.block_count'");
  Crafted e("qwen2");
  e.f32.erase("qwen2.attention.layer_norm_rms_epsilon");
  EXPECT_EQ(error_of(e), "model: missing metadata key 'qwen2.attention.layer_norm_rms_epsilon'");
}

TEST(ModelConfig, ZeroHiddenIsOutOfRange) {
  Crafted c("llama");
  c.u32["llama.embedding_length"] = 0;
  EXPECT_NE(error_of(c).find("'llama.embedding_length' = 0 is out of range"), std::string::npos);
}

TEST(ModelConfig, HeadsNotMultipleOfKvHeads) {
  Crafted c("llama");
  c.u32["llama.attention.head_count_kv"] = 3;
  EXPECT_EQ(error_of(c),
            "model: llama.attention.head_count = 4 is not a multiple of "
            "llama.attention.head_count_kv = 3");
}

TEST(ModelConfig, MissingTensor) {
  Crafted c("llama");
  c.drop.push_back("blk.0.ffn_up.weight");
  EXPECT_EQ(error_of(c), "model: missing tensor 'blk.0.ffn_up.weight'");
}

TEST(ModelConfig, MissingQwen2Bias) {
  Crafted c("qwen2");
  c.drop.push_back("blk.1.attn_v.bias");
  EXPECT_EQ(error_of(c), "model: missing tensor 'blk.1.attn_v.bias'");
}

TEST(ModelConfig, WrongQkNormShape) {
  Crafted c("qwen3");
  c.tensor_ne["blk.0.attn_k_norm.weight"] = {64};
  EXPECT_EQ(error_of(c),
            "model: blk.0.attn_k_norm.weight has shape [64], expected [16] (head_dim=16)");
}

TEST(ModelConfig, NormMustBeF32) {
  Crafted c("llama");
  c.tensor_type["blk.0.ffn_norm.weight"] = DType::kF16;
  EXPECT_EQ(error_of(c),
            "model: blk.0.ffn_norm.weight has type f16, expected f32 (norm and bias tensors "
            "must be F32)");
}

TEST(ModelConfig, FfnMismatch) {
  Crafted c("llama");
  c.tensor_ne["blk.1.ffn_down.weight"] = {64, 96};
  EXPECT_EQ(error_of(c),
            "model: blk.1.ffn_down.weight has shape [64, 96], expected [96, 64] "
            "(embedding_length=64, feed_forward_length=96)");
}

TEST(ModelConfig, EmbeddingWidthMismatch) {
  Crafted c("llama");
  c.tensor_ne["token_embd.weight"] = {32, 40};
  EXPECT_EQ(error_of(c),
            "model: token_embd.weight has shape [32, 40], expected [64, n_vocab] "
            "(embedding_length=64)");
}

TEST(ModelConfig, ExtraBlockBeyondBlockCount) {
  Crafted c("llama");
  c.u32["llama.block_count"] = 1;
  EXPECT_EQ(error_of(c), "model: tensor 'blk.1.attn_norm.weight' exists but llama.block_count = 1");
}

TEST(ModelConfig, UnsupportedArchitecture) {
  Crafted c("gpt2");
  std::vector<uint8_t> bytes;
  Result<ModelConfig> r = config_of(c, bytes);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(),
            "model: architecture 'gpt2' is not supported (supported: llama, qwen2, qwen3)");
}

TEST(ModelConfig, UnsupportedWeightType) {
  // quantize_rows does not encode I32, so this file is written by hand.
  Crafted d("llama");
  std::vector<uint8_t> bytes;
  GgufWriter w2;
  w2.add_string("general.architecture", d.arch);
  for (const auto& [k, v] : d.u32) w2.add_u32(k, v);
  for (const auto& [k, v] : d.f32) w2.add_f32(k, v);
  for (const auto& [name, ne] : d.tensor_ne) {
    int64_t n = 1;
    for (int64_t x : ne) n *= x;
    if (name == "blk.0.attn_q.weight") {
      w2.add_tensor(name, DType::kI32, ne, std::vector<uint8_t>(static_cast<size_t>(n) * 4, 0));
      continue;
    }
    std::vector<float> values(static_cast<size_t>(n), 1.0f);
    w2.add_tensor(name, DType::kF32, ne,
                  quantize_rows(DType::kF32, values.data(), n / ne[0], ne[0]));
  }
  bytes = w2.serialize();
  Result<GgufFile> file = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  Result<ModelConfig> r = ModelConfig::from_gguf(*file);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("model: blk.0.attn_q.weight has type i32, which strata "
                                      "cannot run"),
            std::string::npos)
      << r.status().message();
}

TEST(ModelConfig, LinearRopeScaling) {
  Crafted c("llama");
  c.str["llama.rope.scaling.type"] = "linear";
  c.f32["llama.rope.scaling.factor"] = 4.0f;
  std::vector<uint8_t> bytes;
  Result<ModelConfig> r = config_of(c, bytes);
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_FLOAT_EQ(r->rope_freq_scale, 0.25f);
}

TEST(ModelConfig, YarnScalingIsUnsupported) {
  Crafted c("qwen2");
  c.str["qwen2.rope.scaling.type"] = "yarn";
  EXPECT_EQ(error_of(c),
            "model: qwen2.rope.scaling.type = 'yarn' is not supported (supported: none, linear)");
}

TEST(ModelConfig, ValueLengthMustEqualKeyLength) {
  Crafted c("llama");
  c.u32["llama.attention.value_length"] = 8;
  EXPECT_NE(error_of(c).find("value_length = 8 differs from llama.attention.key_length = 16"),
            std::string::npos);
}

TEST(ModelConfig, SlidingWindowIsUnsupported) {
  Crafted c("llama");
  c.u32["llama.attention.sliding_window"] = 4096;
  EXPECT_NE(error_of(c).find("sliding-window attention is not supported"), std::string::npos);
}

TEST(ModelWeights, FloatMatmulWeightsAreCopiedAndEmbedDequantizes) {
  Crafted c("qwen2");
  c.has_output = false;
  c.tensor_type["token_embd.weight"] = DType::kQ8_0;
  const std::vector<uint8_t> bytes = c.build();
  Result<GgufFile> file = GgufFile::parse(bytes.data(), bytes.size());
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  Result<ModelWeights> w = ModelWeights::load(std::move(*file));
  ASSERT_TRUE(w.is_ok()) << w.status().message();
  EXPECT_EQ(w->layers().size(), 2u);
  // Tied: the embedding's bytes, or a packed copy of them on CPUs whose
  // kernel repacks Q8_0.
  if (w->output().layout == WeightLayout::kGguf) {
    EXPECT_EQ(w->output().data, w->token_embd().data);
  }
  EXPECT_EQ(w->output().rows, w->token_embd().rows);
  EXPECT_EQ(w->output().cols, w->token_embd().cols);
  EXPECT_EQ(w->token_embd().type, DType::kQ8_0);
  EXPECT_EQ(w->layers()[1].attn_k.rows, 32);
  EXPECT_EQ(w->layers()[1].attn_k.cols, 64);
  EXPECT_NE(w->layers()[0].bias_v, nullptr);
  EXPECT_EQ(w->layers()[0].q_norm, nullptr);
  // The embedding and the biases are read in place; a float matmul weight
  // is the model's own copy of its bytes (kernels/packed_weight.h).
  const uint8_t* lo = bytes.data();
  const uint8_t* hi = bytes.data() + bytes.size();
  const auto in_file = [&](const void* p) {
    const auto* b = static_cast<const uint8_t*>(p);
    return b >= lo && b < hi;
  };
  EXPECT_TRUE(in_file(w->token_embd().data));
  EXPECT_TRUE(in_file(w->layers()[0].bias_v));
  const WeightView& q = w->layers()[0].attn_q;
  const GgufTensor* qt = w->file().tensor("blk.0.attn_q.weight");
  ASSERT_NE(qt, nullptr);
  ASSERT_EQ(q.type, DType::kF32);
  EXPECT_FALSE(in_file(q.data));
  EXPECT_EQ(q.layout, WeightLayout::kGguf);
  EXPECT_EQ(std::memcmp(q.data, qt->data, qt->nbytes), 0);
  std::vector<float> row(64, 0.0f);
  w->embed(39, row.data());
  for (float v : row) EXPECT_NEAR(v, 1.0f, 1e-3f);  // Q8_0 scale is fp16
}

}  // namespace
}  // namespace strata
