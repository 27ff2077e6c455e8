// ModelWeights: a loaded model — the mapped GGUF file, its validated
// ModelConfig, and zero-copy views of every tensor the forward pass reads.
//
// Ownership: ModelWeights owns the GgufFile; every norm/bias pointer and
// token_embd() points into its mapping. The matmul weights (the layers' and
// output()) do too, unless this CPU's kernel reads a repacked layout
// (kernels/packed_weight.h): then they point into PackedWeight copies it owns,
// built at load, and their GGUF pages are released. All stay valid while the
// ModelWeights lives (moving it keeps them valid: nothing they point to
// moves). Immutable
// after load(); const methods are safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "kernels/packed_weight.h"
#include "model/model_config.h"
#include "util/status.h"

namespace strata {

struct LayerWeights {
  const float* attn_norm = nullptr;  // [hidden]
  WeightView attn_q;                 // [q_dim rows][hidden cols]
  WeightView attn_k;                 // [kv_dim][hidden]
  WeightView attn_v;                 // [kv_dim][hidden]
  WeightView attn_output;            // [hidden][q_dim]
  const float* bias_q = nullptr;     // [q_dim]   qwen2 only, else nullptr
  const float* bias_k = nullptr;     // [kv_dim]
  const float* bias_v = nullptr;     // [kv_dim]
  const float* q_norm = nullptr;     // [head_dim] qwen3 only, else nullptr
  const float* k_norm = nullptr;     // [head_dim]
  const float* ffn_norm = nullptr;   // [hidden]
  WeightView ffn_gate;               // [ffn][hidden]
  WeightView ffn_up;                 // [ffn][hidden]
  WeightView ffn_down;               // [hidden][ffn]
};

class ModelWeights {
 public:
  // Maps `path`, reads its config and builds the views.
  static Result<ModelWeights> open(const std::string& path);
  // Takes ownership of an opened file.
  static Result<ModelWeights> load(GgufFile file);

  ModelWeights(ModelWeights&&) noexcept = default;
  ModelWeights& operator=(ModelWeights&&) noexcept = default;

  const GgufFile& file() const { return *file_; }
  const ModelConfig& config() const { return config_; }
  const std::vector<LayerWeights>& layers() const { return layers_; }
  const WeightView& token_embd() const { return token_embd_; }  // [vocab][hidden]
  // token_embd's bytes when tied (a packed copy of them where the kernel repacks).
  const WeightView& output() const { return output_; }
  const float* output_norm() const { return output_norm_; }  // [hidden]

  // Writes the embedding of `token` (0 <= token < vocab_size) to out[hidden],
  // dequantizing its row.
  void embed(int32_t token, float* out) const;

 private:
  ModelWeights() = default;
  // Replaces the matmul weights' views by packed copies where it pays.
  void pack_weights();

  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  std::vector<LayerWeights> layers_;
  WeightView token_embd_;
  WeightView output_;
  const float* output_norm_ = nullptr;
  std::vector<std::unique_ptr<PackedWeight>> packed_;
};

}  // namespace strata
