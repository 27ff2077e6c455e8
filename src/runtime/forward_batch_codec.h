// The bytes of a ForwardBatch, as rank 0 broadcasts each step's batch to the
// other ranks of a model-parallel group (parallel/process_group.h). Little
// endian int32 arrays with their counts in front; decode() checks every
// count against the bytes left, so a truncated or corrupt message is an
// error, never a read past the end.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/forward_batch.h"
#include "util/status.h"

namespace strata {

std::vector<uint8_t> encode_forward_batch(const ForwardBatch& batch);
Result<ForwardBatch> decode_forward_batch(std::span<const uint8_t> bytes);

}  // namespace strata
