// RandomModelSpec and write_random_model: builds a GGUF file of a llama,
// qwen2 or qwen3 model with seeded random weights (bit-identical for the same
// spec on every machine), in one of the weight types strata runs.
//
// Weights ~ N(0, 1/sqrt(fan_in)) so activations stay O(1) through the layers;
// norm weights ~ 1 + N(0, 0.05); biases ~ N(0, 0.1); 1-D tensors are F32.
// `peaky_scale` multiplies the output head (or the tied embedding) so that
// next-token distributions are sharp, which makes greedy continuations robust
// to rounding differences between engines.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_writer.h"
#include "util/status.h"

namespace strata::mkmodel {

struct RandomModelSpec {
  std::string arch = "llama";  // llama | qwen2 | qwen3
  std::string type = "f32";    // f32 f16 bf16 q8_0 q4_0 q4_k q6_k q4_k_m
  int num_layers = 2;
  int64_t hidden_dim = 256;
  int num_heads = 4;
  int num_kv_heads = 2;
  int head_dim = 0;  // 0: hidden_dim / num_heads
  int64_t ffn_dim = 512;
  int32_t vocab_size = 512;  // >= 300; ignored when tokenizer_json is set
  int64_t context_length = 256;
  float rope_freq_base = 10000.0f;
  float rms_norm_eps = 1e-5f;
  uint64_t seed = 1;
  bool is_tied = false;        // omit output.weight
  float peaky_scale = 1.0f;    // > 1 sharpens next-token distributions
  std::string tokenizer_json;  // import a Hugging Face tokenizer.json
  int num_threads = 0;         // 0: hardware concurrency
};

// Checks the spec, builds every tensor and writes `path` atomically.
Status write_random_model(const RandomModelSpec& spec, const std::string& path);

}  // namespace strata::mkmodel
