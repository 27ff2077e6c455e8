#include "runtime/kv_storage.h"

#include <new>
#include <string>

namespace strata {

size_t KvStorage::bytes_per_block(const ModelConfig& config, int block_size) {
  return static_cast<size_t>(block_size) * static_cast<size_t>(config.kv_dim()) * sizeof(uint16_t) *
         2 * static_cast<size_t>(config.num_layers);
}

Result<KvStorage> KvStorage::create(const ModelConfig& config, int block_size, int64_t num_blocks) {
  if (block_size <= 0 || block_size > 4096) {
    return invalid_argument("kv: block size " + std::to_string(block_size) +
                            " is out of range [1, 4096]");
  }
  if (num_blocks <= 0 || num_blocks > (int64_t{1} << 31) / block_size) {
    return invalid_argument("kv: block count " + std::to_string(num_blocks) +
                            " is out of range (slots must fit in int32)");
  }
  KvStorage s;
  s.num_blocks_ = num_blocks;
  s.block_size_ = block_size;
  s.n_kv_heads_ = config.num_kv_heads;
  s.head_dim_ = config.head_dim;
  const size_t elems_per_layer =
      static_cast<size_t>(num_blocks) * block_size * static_cast<size_t>(config.kv_dim());
  try {
    s.k_.resize(config.num_layers);
    s.v_.resize(config.num_layers);
    for (int il = 0; il < config.num_layers; ++il) {
      s.k_[il].assign(elems_per_layer, 0);
      s.v_[il].assign(elems_per_layer, 0);
    }
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kResourceExhausted,
                  "kv: cannot allocate " +
                      std::to_string(bytes_per_block(config, block_size) * num_blocks) +
                      " bytes of KV cache; lower --kv-cache-memory");
  }
  s.total_bytes_ = bytes_per_block(config, block_size) * static_cast<size_t>(num_blocks);
  return s;
}

Result<KvStorage> KvStorage::create_for_budget(const ModelConfig& config, int block_size,
                                               size_t budget_bytes) {
  if (block_size <= 0) {
    return invalid_argument("kv: block size " + std::to_string(block_size) + " must be positive");
  }
  const size_t per_block = bytes_per_block(config, block_size);
  const int64_t num_blocks = static_cast<int64_t>(budget_bytes / per_block);
  if (num_blocks == 0) {
    return invalid_argument("kv: a budget of " + std::to_string(budget_bytes) +
                            " bytes holds no block of " + std::to_string(per_block) +
                            " bytes; raise --kv-cache-memory");
  }
  return create(config, block_size, num_blocks);
}

KvLayerView KvStorage::layer(int il) {
  KvLayerView v;
  v.k = k_[il].data();
  v.v = v_[il].data();
  v.num_blocks = num_blocks_;
  v.block_size = block_size_;
  v.n_kv_heads = n_kv_heads_;
  v.head_dim = head_dim_;
  return v;
}

}  // namespace strata
