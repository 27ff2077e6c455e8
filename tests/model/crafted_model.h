// Crafted: a tiny model written in memory with GgufWriter, for tests that
// need a file with one defect at a time (test_model_config) or a small model
// to run (test_model_runner). hidden 64, 4 heads, 2 kv heads, head_dim 16,
// ffn 96, 2 layers, vocab 40; tests edit the maps before build().
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gguf/gguf_writer.h"
#include "kernels/quant.h"

namespace strata {

struct Crafted {
  std::string arch = "llama";
  std::map<std::string, uint32_t> u32;
  std::map<std::string, float> f32;
  std::map<std::string, std::string> str;
  std::map<std::string, std::vector<int64_t>> tensor_ne;
  std::map<std::string, DType> tensor_type;
  std::vector<std::string> drop;
  bool has_output = true;
  bool is_random = false;  // random values instead of all ones

  explicit Crafted(std::string a) : arch(std::move(a)) {
    u32[arch + ".context_length"] = 128;
    u32[arch + ".embedding_length"] = 64;
    u32[arch + ".block_count"] = 2;
    u32[arch + ".feed_forward_length"] = 96;
    u32[arch + ".attention.head_count"] = 4;
    u32[arch + ".attention.head_count_kv"] = 2;
    f32[arch + ".attention.layer_norm_rms_epsilon"] = 1e-6f;
    f32[arch + ".rope.freq_base"] = 10000.0f;
    const int64_t h = 64, q = 64, kv = 32, ffn = 96, vocab = 40, hd = 16;
    tensor_ne["token_embd.weight"] = {h, vocab};
    tensor_ne["output_norm.weight"] = {h};
    tensor_ne["output.weight"] = {h, vocab};
    for (int il = 0; il < 2; ++il) {
      const std::string b = "blk." + std::to_string(il) + ".";
      tensor_ne[b + "attn_norm.weight"] = {h};
      tensor_ne[b + "attn_q.weight"] = {h, q};
      tensor_ne[b + "attn_k.weight"] = {h, kv};
      tensor_ne[b + "attn_v.weight"] = {h, kv};
      tensor_ne[b + "attn_output.weight"] = {q, h};
      tensor_ne[b + "ffn_norm.weight"] = {h};
      tensor_ne[b + "ffn_gate.weight"] = {h, ffn};
      tensor_ne[b + "ffn_up.weight"] = {h, ffn};
      tensor_ne[b + "ffn_down.weight"] = {ffn, h};
      if (arch == "qwen2") {
        tensor_ne[b + "attn_q.bias"] = {q};
        tensor_ne[b + "attn_k.bias"] = {kv};
        tensor_ne[b + "attn_v.bias"] = {kv};
      }
      if (arch == "qwen3") {
        tensor_ne[b + "attn_q_norm.weight"] = {hd};
        tensor_ne[b + "attn_k_norm.weight"] = {hd};
      }
    }
  }

  std::vector<uint8_t> build() const {
    uint64_t rng = 12345;
    GgufWriter w;
    w.add_string("general.architecture", arch);
    for (const auto& [k, v] : u32) w.add_u32(k, v);
    for (const auto& [k, v] : f32) w.add_f32(k, v);
    for (const auto& [k, v] : str) w.add_string(k, v);
    for (const auto& [name, ne] : tensor_ne) {
      if (std::find(drop.begin(), drop.end(), name) != drop.end()) continue;
      if (!has_output && name == "output.weight") continue;
      auto it = tensor_type.find(name);
      const DType type = it != tensor_type.end() ? it->second : DType::kF32;
      int64_t n = 1;
      for (int64_t d : ne) n *= d;
      std::vector<float> values(static_cast<size_t>(n), 1.0f);
      if (is_random) {
        // Norm weights near 1, everything else small and signed.
        const bool is_norm = name.find("norm") != std::string::npos;
        for (float& v : values) {
          rng = rng * 6364136223846793005ull + 1442695040888963407ull;
          const float u = static_cast<float>(rng >> 40) / static_cast<float>(1 << 24) - 0.5f;
          v = is_norm ? 1.0f + 0.1f * u : 0.5f * u;
        }
      }
      const int64_t cols = ne[0];
      w.add_tensor(name, type, ne, quantize_rows(type, values.data(), n / cols, cols));
    }
    return w.serialize();
  }
};

}  // namespace strata
