#include "kvtier/chunk_run.h"

#include <vector>

#include "kvtier/chunk_io.h"

namespace strata {

ChunkRunWrite write_chunk_run(KvStorage& storage, std::span<const KvChunkHandle> chunks,
                              int64_t first_chunk, int64_t blocks_per_chunk, int64_t first_block,
                              std::span<const int32_t> block_ids,
                              const std::function<void(size_t, int64_t)>& on_written) {
  ChunkRunWrite out;
  const int64_t end_block = first_block + static_cast<int64_t>(block_ids.size());
  std::vector<int32_t> ids(static_cast<size_t>(blocks_per_chunk));
  for (size_t j = 0; j < chunks.size(); ++j) {
    const int64_t chunk_first = (first_chunk + static_cast<int64_t>(j)) * blocks_per_chunk;
    if (chunk_first + blocks_per_chunk <= first_block) continue;
    if (chunk_first >= end_block) break;
    int64_t n = 0;
    for (int64_t b = 0; b < blocks_per_chunk; ++b) {
      const int64_t logical = chunk_first + b;
      const bool wanted = logical >= first_block && logical < end_block;
      ids[static_cast<size_t>(b)] =
          wanted ? block_ids[static_cast<size_t>(logical - first_block)] : -1;
      n += wanted ? 1 : 0;
    }
    if (Status s = scatter_chunk_payload(storage, chunks[j]->payload, ids); !s) {
      out.failed_chunk = j;
      out.status = std::move(s);
      break;
    }
    out.num_blocks += n;
    if (on_written) on_written(j, n);
  }
  return out;
}

}  // namespace strata
