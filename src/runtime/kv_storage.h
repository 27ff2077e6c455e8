// KvStorage: the memory of the paged KV cache — for every layer, K and V
// pools of fp16 [num_blocks][n_kv_heads][block_size][head_dim] (the layout
// kernels/attention.h documents).
//
// KvStorage only owns bytes. Which block belongs to which sequence is the
// caller's business (block tables and slot mappings arrive with each
// ForwardBatch); a block allocator with refcounts and prefix caching sits on
// top without KvStorage changing. Sized once, from a block count or a byte
// budget; never reallocated. Thread-compatible: the runner writes it during
// forward(), nobody else at the same time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/attention.h"
#include "model/model_config.h"
#include "util/status.h"

namespace strata {

class KvStorage {
 public:
  // Bytes one block takes across all layers (K and V).
  static size_t bytes_per_block(const ModelConfig& config, int block_size);

  // `num_blocks` blocks of `block_size` tokens for every layer of `config`.
  static Result<KvStorage> create(const ModelConfig& config, int block_size, int64_t num_blocks);
  // As many blocks as fit in `budget_bytes` (error if not even one fits; the
  // message names --kv-cache-memory).
  static Result<KvStorage> create_for_budget(const ModelConfig& config, int block_size,
                                             size_t budget_bytes);

  KvStorage(KvStorage&&) noexcept = default;
  KvStorage& operator=(KvStorage&&) noexcept = default;

  int64_t num_blocks() const { return num_blocks_; }
  int block_size() const { return block_size_; }
  int num_layers() const { return static_cast<int>(k_.size()); }
  size_t total_bytes() const { return total_bytes_; }

  // The pools of layer `il`, as the attention kernels take them.
  KvLayerView layer(int il);

 private:
  KvStorage() = default;

  int64_t num_blocks_ = 0;
  int block_size_ = 0;
  int n_kv_heads_ = 0;
  int head_dim_ = 0;
  size_t total_bytes_ = 0;
  std::vector<std::vector<uint16_t>> k_;  // per layer
  std::vector<std::vector<uint16_t>> v_;
};

}  // namespace strata
