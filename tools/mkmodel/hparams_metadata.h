// The general.* and {arch}.* metadata every model strata-mkmodel writes, in
// the key order llama.cpp's converter uses. Shared by the random-weight and
// the trained-weight paths so both describe a model the same way.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_writer.h"

namespace strata::mkmodel {

struct HparamsMetadata {
  std::string arch;  // llama | qwen2 | qwen3
  std::string name;  // general.name
  uint32_t file_type = 0;
  int64_t context_length = 0;
  int64_t hidden_dim = 0;
  int64_t num_layers = 0;
  int64_t ffn_dim = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  float rms_norm_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
};

// key_length/value_length are written only when llama.cpp cannot derive
// head_dim as hidden / heads (and always for qwen3, whose head_dim is free).
inline void write_hparams_metadata(const HparamsMetadata& m, GgufWriter& w) {
  const std::string& a = m.arch;
  w.add_string("general.architecture", a);
  w.add_string("general.name", m.name);
  w.add_u32("general.file_type", m.file_type);
  w.add_u32("general.quantization_version", 2);
  w.add_u32(a + ".context_length", static_cast<uint32_t>(m.context_length));
  w.add_u32(a + ".embedding_length", static_cast<uint32_t>(m.hidden_dim));
  w.add_u32(a + ".block_count", static_cast<uint32_t>(m.num_layers));
  w.add_u32(a + ".feed_forward_length", static_cast<uint32_t>(m.ffn_dim));
  w.add_u32(a + ".attention.head_count", static_cast<uint32_t>(m.num_heads));
  w.add_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(m.num_kv_heads));
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", m.rms_norm_eps);
  w.add_f32(a + ".rope.freq_base", m.rope_freq_base);
  w.add_u32(a + ".rope.dimension_count", static_cast<uint32_t>(m.head_dim));
  if (a == "qwen3" || m.num_heads * m.head_dim != m.hidden_dim) {
    w.add_u32(a + ".attention.key_length", static_cast<uint32_t>(m.head_dim));
    w.add_u32(a + ".attention.value_length", static_cast<uint32_t>(m.head_dim));
  }
}

}  // namespace strata::mkmodel
