// KvSliceMessage: what rank 0's tiered KV connector tells the other ranks of
// a model-parallel group (ControlKind::kKvTier), so every rank moves its own
// slice of the same chunks (engine/kv_slice_worker.h). Rank 0's scheduler
// decides every load and save; the workers only mirror them on their slice.
//
//   kOpen    the tiers' options and the block size (a new connector)
//   kLoad    start looking up the slices of chunks first_chunk.. (hashes:
//            the chained hash of each chunk's last block, in order)
//   kCancel  forget load load_id
//   kWrite   write load load_id's run into block_ids (the prompt's logical
//            blocks first_block..); the worker answers how many leading
//            blocks it wrote (an int64 to rank 0)
//   kSave    store the slices of these chunks (hashes[i] keys chunk i, its
//            blocks are block_ids[i * blocks_per_chunk ..])
//   kFlush   wait until every store arrived; the worker answers (an int64)
//   kClose   drop the connector (rank 0's went away)
//
// Encoding: u8 op, then every field below in order, little endian, strings
// and arrays with a u32 count in front; decode() checks each count against
// the bytes left, so a truncated message is an error, never a read past the
// end. Plain value.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "kv/block_hash.h"
#include "kvtier/kv_tier_options.h"
#include "util/status.h"

namespace strata {

enum class KvSliceOp : uint8_t {
  kOpen = 1,
  kLoad = 2,
  kCancel = 3,
  kWrite = 4,
  kSave = 5,
  kFlush = 6,
  kClose = 7,
};

struct KvSliceMessage {
  KvSliceOp op = KvSliceOp::kClose;
  int32_t block_size = 0;          // kOpen
  KvTierOptions options;           // kOpen
  uint64_t load_id = 0;            // kLoad, kCancel, kWrite
  int64_t first_chunk = 0;         // kLoad
  int64_t first_block = 0;         // kWrite
  std::vector<BlockHash> hashes;   // kLoad, kSave
  std::vector<int32_t> block_ids;  // kWrite, kSave
};

std::vector<uint8_t> encode_kv_slice_message(const KvSliceMessage& message);
Result<KvSliceMessage> decode_kv_slice_message(std::span<const uint8_t> bytes);

}  // namespace strata
