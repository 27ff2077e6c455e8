// KvTier: one storage level of the tiered KV cache (host RAM, local disk,
// Redis), keyed by ChunkKey and holding KvChunk values.
//
// Contract for every implementation (tests/kvtier's conformance suite checks
// each one):
// - Thread-safe: any method from any thread.
// - put() is synchronous and idempotent: storing a key twice keeps one copy
//   (two replicas may store the same key). A tier whose capacity is smaller
//   than the chunk returns kInvalidArgument (the chunk's problem, not a
//   fault). Any other error is a fault (full disk, network down, timeout).
// - get() returns kNotFound on a miss - including a stored value found
//   corrupt, which the tier deletes and counts as an error - and any other
//   code for a fault of the tier itself.
// - contains() is false on any error. remove() of a missing key is OK.
// - stats() is a snapshot; its counters are exact (a hit, a miss, a put each
//   count once).
#pragma once

#include <string_view>

#include "kvtier/chunk_key.h"
#include "kvtier/kv_chunk.h"
#include "kvtier/tier_stats.h"
#include "util/status.h"

namespace strata {

class KvTier {
 public:
  virtual ~KvTier() = default;
  virtual std::string_view name() const = 0;  // "ram", "disk", "redis"
  // True when put()/get() never do I/O or block (a memory tier): the manager
  // then writes it on the caller's thread instead of its background writer.
  virtual bool is_memory() const { return false; }
  virtual bool contains(const ChunkKey& key) = 0;
  virtual Status put(const KvChunkHandle& chunk) = 0;
  virtual Result<KvChunkHandle> get(const ChunkKey& key) = 0;
  virtual Status remove(const ChunkKey& key) = 0;
  virtual TierStats stats() const = 0;
  // Whether the tier answers now (Redis: PING), asked once at start-up so
  // the log says which tiers are reachable; local tiers always are.
  virtual Status ping() { return Status::ok(); }
};

// Whether a Status from a tier operation is a fault of the tier (the manager
// then bypasses it for a while), as opposed to a miss or a chunk too large.
inline bool is_tier_fault(const Status& s) {
  return !s.is_ok() && s.code() != StatusCode::kNotFound &&
         s.code() != StatusCode::kInvalidArgument;
}

}  // namespace strata
