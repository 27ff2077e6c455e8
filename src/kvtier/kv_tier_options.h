// KvTierOptions: which KV tiers the engine uses and how large they are.
// Parsed from flags by the CLI only; validated once at start-up. Plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"

namespace strata {

struct KvTierOptions {
  int32_t chunk_tokens = 256;            // --kv-chunk-tokens: tokens per chunk, a multiple of
                                         // the block size
  size_t cpu_bytes = 0;                  // --kv-cpu-bytes: RAM tier capacity; 0 = RAM tier off
  std::string disk_dir;                  // --kv-disk-dir: disk tier directory; empty = off
  size_t disk_bytes = size_t{16} << 30;  // --kv-disk-bytes: disk tier capacity
  std::string remote_url;                // --kv-remote: "redis://host:port"; empty = off
  std::string remote_password;           // --kv-remote-password: Redis AUTH; empty = none
  int32_t remote_timeout_ms = 200;       // per Redis operation (connect, command)
  size_t max_pending_store_bytes = size_t{256} << 20;  // store queue bound; beyond: drop stores

  // Whether any tier is configured.
  bool enabled() const { return cpu_bytes > 0 || !disk_dir.empty() || !remote_url.empty(); }
  // chunk_tokens > 0 and a multiple of block_size; a URL that starts with
  // redis://; positive timeout and disk_bytes when the disk tier is on.
  Status validate(int32_t block_size) const;
};

}  // namespace strata
