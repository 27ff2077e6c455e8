// ModelConfig: the hyperparameters of a decoder-only transformer read from a
// GGUF file's metadata (llama.cpp's key names) and cross-checked against its
// tensor shapes.
//
// from_gguf() is the single place that decides whether strata can run a file:
// every required key is present and sane, every tensor the forward pass uses
// exists with the shape the hyperparameters imply and a type strata has
// kernels for, and norm/bias tensors are F32. Any defect is one Status naming
// the key or tensor, the shape found and the shape expected with the
// hyperparameters that imply it. A config that came out of from_gguf() needs
// no further checks downstream. Plain value type; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "gguf/gguf.h"
#include "kernels/ops.h"
#include "util/status.h"

namespace strata {

enum class Architecture {
  kLlama,  // also Mistral without a sliding window (converted as "llama")
  kQwen2,  // llama + q/k/v biases, NeoX RoPE
  kQwen3,  // llama + per-head RMS norm of q and k, NeoX RoPE, free head_dim
};

std::string_view architecture_name(Architecture arch);

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  int64_t context_length = 0;  // {arch}.context_length (trained maximum)
  int64_t hidden_dim = 0;      // {arch}.embedding_length
  int num_layers = 0;          // {arch}.block_count
  int64_t ffn_dim = 0;         // {arch}.feed_forward_length
  int num_heads = 0;           // {arch}.attention.head_count
  int num_kv_heads = 0;        // {arch}.attention.head_count_kv (default num_heads)
  int head_dim = 0;            // {arch}.attention.key_length (default hidden/heads)
  float rms_norm_eps = 1e-5f;  // {arch}.attention.layer_norm_rms_epsilon
  int64_t vocab_size = 0;      // token_embd.weight ne[1]

  RopeStyle rope_style = RopeStyle::kNormal;  // llama: normal; qwen2/qwen3: NeoX
  int rope_dim = 0;                           // {arch}.rope.dimension_count (default head_dim)
  float rope_freq_base = 10000.0f;
  float rope_freq_scale = 1.0f;  // 1 / {arch}.rope.scaling.factor for linear scaling

  bool has_qkv_bias = false;    // qwen2
  bool has_qk_norm = false;     // qwen3
  bool is_output_tied = false;  // no output.weight: logits use token_embd.weight

  int64_t q_dim() const { return int64_t{num_heads} * head_dim; }
  int64_t kv_dim() const { return int64_t{num_kv_heads} * head_dim; }

  RopeParams rope_params() const;

  // Reads and validates the config; see the file comment.
  static Result<ModelConfig> from_gguf(const GgufFile& file);
};

}  // namespace strata
