// PrefixProbe: what an engine can tell a router about one prompt, right now,
// without touching engine state: how many of its leading tokens are cached
// in the pool and in each KV tier, and how loaded the engine is. The router
// predicts a replica's time to first token from it (strata router).
// A plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata {

// Leading prompt tokens one source outside the pool could supply.
struct KvSourceProbe {
  std::string name;  // "ram", "disk", "redis"
  int64_t num_tokens = 0;
  bool is_available = true;  // false: bypassed after a fault
  // Measured load rate (prompt tokens per second read back); 0 = unknown.
  double tokens_per_s = 0.0;
};

struct PrefixProbe {
  int32_t block_size = 0;
  // Leading tokens of the chain cached in the pool (whole blocks).
  int64_t num_pool_tokens = 0;
  // Per tier, fastest first (whole chunks, counted from the prompt's start).
  std::vector<KvSourceProbe> tiers;
  // Load.
  int64_t num_running = 0;
  int64_t num_waiting = 0;
  int64_t num_loading = 0;
  int64_t num_pending_prefill_tokens = 0;
  int64_t num_free_kv_blocks = 0;
  int64_t num_kv_blocks = 0;
  double prefill_tokens_per_s = 0.0;  // measured; 0 until then
  double decode_tokens_per_s = 0.0;
};

}  // namespace strata
