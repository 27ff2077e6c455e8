#include "kvtier/kv_tier_options.h"

#include <string>

namespace strata {

Status KvTierOptions::validate(int32_t block_size) const {
  if (block_size <= 0) return invalid_argument("kv tiers: block size must be positive");
  if (chunk_tokens <= 0 || chunk_tokens % block_size != 0) {
    return invalid_argument("--kv-chunk-tokens " + std::to_string(chunk_tokens) +
                            " must be a positive multiple of the block size " +
                            std::to_string(block_size));
  }
  if (!disk_dir.empty() && disk_bytes == 0) {
    return invalid_argument("--kv-disk-bytes must be positive when --kv-disk-dir is set");
  }
  if (!remote_url.empty() && remote_url.rfind("redis://", 0) != 0) {
    return invalid_argument("--kv-remote '" + remote_url + "' must look like redis://host:port");
  }
  if (!remote_url.empty() && remote_timeout_ms <= 0) {
    return invalid_argument("kv tiers: the Redis timeout must be positive");
  }
  if (!remote_password.empty() && remote_url.empty()) {
    return invalid_argument("--kv-remote-password needs --kv-remote");
  }
  return Status::ok();
}

}  // namespace strata
