// KvChunk: the K/V of one chunk (chunk_tokens tokens, every layer), immutable
// once built. KvChunkHandle, a shared_ptr to a const chunk, is the "memory
// handle" shared by reference count between the RAM tier, the store queue and
// loaders: a chunk evicted from RAM stays alive while a loader still reads it.
//
// The payload layout belongs to the engine's chunk_io (src/kvtier/chunk_io.h);
// tiers treat it as opaque bytes. Thread-safety: immutable after construction,
// so safe to read from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kvtier/chunk_key.h"

namespace strata {

struct KvChunk {
  ChunkKey key;
  int32_t num_tokens = 0;        // == chunk_tokens
  std::vector<uint8_t> payload;  // opaque to tiers (see chunk_io)
};

using KvChunkHandle = std::shared_ptr<const KvChunk>;

}  // namespace strata
