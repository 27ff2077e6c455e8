// ModelWeights: a loaded model — the mapped GGUF file, its validated
// ModelConfig, and zero-copy views of every tensor the forward pass reads.
//
// Under model parallelism (a ProcessGroup) a ModelWeights is one rank's
// shard: its stage's layers only, and of each layer its T-th of the heads
// (Q/K/V rows, O columns) and of the FFN (gate/up rows, down columns), and
// of the vocabulary the output rows [vocab_begin, vocab_end). Row shards
// are views of contiguous GGUF bytes; column shards are copies of each
// row's slice (whole quant blocks). Nothing outside the shard is read, so
// its pages are never faulted in. config() stays the whole model's;
// local_config() is the shard's shape (heads, kv heads, ffn / T; the
// stage's layer count), which the runner and the KV pool use.
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
#include "parallel/parallel_layout.h"
#include "util/status.h"

namespace strata {

class ProcessGroup;

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
  // Maps `path`, reads its config and builds the views; with a group, of
  // this rank's shard only (an error names the flag when the model's shape
  // does not split that way). The group must outlive the weights.
  static Result<ModelWeights> open(const std::string& path, ProcessGroup* group = nullptr);
  // Takes ownership of an opened file.
  static Result<ModelWeights> load(GgufFile file, ProcessGroup* group = nullptr);
  // The shard of `layout` (no group: tests check the sharding alone).
  static Result<ModelWeights> load_shard(GgufFile file, const ParallelLayout& layout);

  ModelWeights(ModelWeights&&) noexcept = default;
  ModelWeights& operator=(ModelWeights&&) noexcept = default;

  const GgufFile& file() const { return *file_; }
  const ModelConfig& config() const { return config_; }
  // This shard's shape (== config() without parallelism).
  const ModelConfig& local_config() const { return local_config_; }
  const ParallelLayout& layout() const { return layout_; }
  // The group this shard runs in; null without parallelism.
  ProcessGroup* group() const { return group_; }
  // The stage's layers are [first_layer(), first_layer() + layers().size()).
  int first_layer() const { return first_layer_; }
  // output() holds the vocabulary rows [vocab_begin(), vocab_end()).
  int64_t vocab_begin() const { return vocab_begin_; }
  int64_t vocab_end() const { return vocab_end_; }
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
  static Result<ModelWeights> load_impl(GgufFile file, const ParallelLayout& layout,
                                        ProcessGroup* group);
  // Cuts every view down to this rank's shard.
  Status shard(const ParallelLayout& layout);
  // Replaces the matmul weights' views by packed copies where it pays.
  void pack_weights();

  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ModelConfig local_config_;
  ParallelLayout layout_;
  ProcessGroup* group_ = nullptr;
  int first_layer_ = 0;
  int64_t vocab_begin_ = 0;
  int64_t vocab_end_ = 0;
  std::vector<LayerWeights> layers_;
  WeightView token_embd_;
  WeightView output_;
  const float* output_norm_ = nullptr;
  std::vector<std::unique_ptr<PackedWeight>> packed_;
  std::vector<std::unique_ptr<uint8_t[]>> column_shards_;  // copies of row slices
};

}  // namespace strata
