#include "kvtier/chunk_io.h"

#include <cstring>
#include <string>

namespace strata {
namespace {

// Bytes of K (or of V) of one block in one layer.
size_t block_plane_bytes(const KvLayerView& view) {
  return static_cast<size_t>(view.block_size) * static_cast<size_t>(view.n_kv_heads) *
         static_cast<size_t>(view.head_dim) * sizeof(uint16_t);
}

}  // namespace

size_t kv_bytes_per_token(const ModelConfig& config) {
  return static_cast<size_t>(config.num_layers) * 2 * static_cast<size_t>(config.kv_dim()) *
         sizeof(uint16_t);
}

std::vector<uint8_t> gather_chunk_payload(KvStorage& storage, std::span<const int32_t> block_ids) {
  std::vector<uint8_t> payload;
  if (storage.num_layers() == 0 || block_ids.empty()) return payload;
  const size_t plane = block_plane_bytes(storage.layer(0));
  payload.resize(plane * block_ids.size() * 2 * static_cast<size_t>(storage.num_layers()));
  uint8_t* out = payload.data();
  for (int il = 0; il < storage.num_layers(); ++il) {
    const KvLayerView view = storage.layer(il);
    for (const uint16_t* pool : {view.k, view.v}) {
      const auto* base = reinterpret_cast<const uint8_t*>(pool);
      for (int32_t b : block_ids) {
        std::memcpy(out, base + static_cast<size_t>(b) * plane, plane);
        out += plane;
      }
    }
  }
  return payload;
}

Status scatter_chunk_payload(KvStorage& storage, std::span<const uint8_t> payload,
                             std::span<const int32_t> block_ids) {
  if (storage.num_layers() == 0) return invalid_argument("chunk_io: the KV storage has no layers");
  const size_t plane = block_plane_bytes(storage.layer(0));
  const size_t expected = plane * block_ids.size() * 2 * static_cast<size_t>(storage.num_layers());
  if (payload.size() != expected) {
    return invalid_argument("chunk_io: payload has " + std::to_string(payload.size()) +
                            " bytes, expected " + std::to_string(expected) + " for " +
                            std::to_string(block_ids.size()) + " blocks");
  }
  for (int32_t b : block_ids) {
    if (b >= storage.num_blocks()) {
      return invalid_argument("chunk_io: block " + std::to_string(b) + " is out of range");
    }
  }
  const uint8_t* in = payload.data();
  for (int il = 0; il < storage.num_layers(); ++il) {
    const KvLayerView view = storage.layer(il);
    for (uint16_t* pool : {view.k, view.v}) {
      auto* base = reinterpret_cast<uint8_t*>(pool);
      for (int32_t b : block_ids) {
        if (b >= 0) std::memcpy(base + static_cast<size_t>(b) * plane, in, plane);
        in += plane;
      }
    }
  }
  return Status::ok();
}

}  // namespace strata
