// chunk_run: writes a run of consecutive loaded chunks into the blocks an
// engine took for part of a prompt. Both KV connectors end a load with it:
// the tiered cache's (chunks found in RAM, disk or Redis) and the remote
// prefill's (chunks a prefill worker sent).
//
// Chunk j of the run holds the prompt's logical blocks
// [(first_chunk + j) * blocks_per_chunk, (first_chunk + j + 1) * blocks_per_chunk);
// the engine asks for logical blocks [first_block, first_block +
// block_ids.size()), written into block_ids. Blocks of a chunk outside that
// range are skipped (the pool already holds them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "kvtier/kv_chunk.h"
#include "runtime/kv_storage.h"
#include "util/status.h"

namespace strata {

struct ChunkRunWrite {
  int64_t num_blocks = 0;  // leading requested blocks written
  // The first chunk that could not be written (writing stopped there), with
  // why; ok when every overlapping chunk was written.
  size_t failed_chunk = 0;
  Status status;
};

// `on_written(j, n)` is called after chunk j wrote n requested blocks.
ChunkRunWrite write_chunk_run(KvStorage& storage, std::span<const KvChunkHandle> chunks,
                              int64_t first_chunk, int64_t blocks_per_chunk, int64_t first_block,
                              std::span<const int32_t> block_ids,
                              const std::function<void(size_t, int64_t)>& on_written = nullptr);

}  // namespace strata
