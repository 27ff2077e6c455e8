// chunk_io: copies the K/V of a run of whole KV blocks between KvStorage and
// a chunk payload (the bytes a KvChunk carries between tiers).
//
// Payload layout (fp16, exactly as KvStorage holds it; version 2 of the
// chunk format, so a change here needs kChunkFormatVersion bumped; version 1
// had each block [block_size][n_kv_heads][head_dim]):
//   for each layer l in [0, num_layers):
//     K of block 0, K of block 1, ..., K of block n-1   (each [n_kv_heads][block_size][head_dim])
//     V of block 0, V of block 1, ..., V of block n-1
// so payload bytes = num_tokens * kv_bytes_per_token(config), and
// kv_bytes_per_token = num_layers * 2 (K, V) * n_kv_heads * head_dim * 2 (fp16).
//
// Free functions over borrowed storage; not thread-safe against a forward
// pass writing the same storage (call them on the engine thread, between
// steps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "model/model_config.h"
#include "runtime/kv_storage.h"
#include "util/status.h"

namespace strata {

// Bytes of K and V one token takes across all layers.
size_t kv_bytes_per_token(const ModelConfig& config);

// The payload of the blocks `block_ids` (in order), read from `storage`.
// Precondition: every id is a valid block of `storage`.
std::vector<uint8_t> gather_chunk_payload(KvStorage& storage, std::span<const int32_t> block_ids);

// Writes `payload` (a chunk of block_ids.size() blocks) into `storage`; block
// i of the chunk goes to block_ids[i], and a negative id skips block i (it is
// already present). Fails, writing nothing, when the payload's size does not
// match block_ids.size() blocks of this storage, or an id is out of range.
Status scatter_chunk_payload(KvStorage& storage, std::span<const uint8_t> payload,
                             std::span<const int32_t> block_ids);

}  // namespace strata
