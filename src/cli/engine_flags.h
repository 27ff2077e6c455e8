// Engine flags: adds the serving engine's knobs (--kv-cache-memory,
// --block-size, --max-num-batched-tokens, --max-num-seqs, --policy,
// --max-model-len, -t/--threads, --no-prefix-caching, and the KV tiers:
// --kv-chunk-tokens, --kv-cpu-bytes, --kv-disk-dir, --kv-disk-bytes,
// --kv-remote, --kv-remote-password) to a CLI11 subcommand,
// so `strata bench throughput` and `strata serve` parse them the same way.
// Only main() (through these helpers) reads flags.
#pragma once

#include <string>

#include "engine/engine_options.h"
#include "util/status.h"

namespace CLI {
class App;
}

namespace strata::cli {

// Raw flag values; to_engine_options() turns them into EngineOptions.
struct EngineFlags {
  std::string kv_cache_memory = "2GiB";  // bytes, or with a K/M/G[i]B suffix
  int32_t block_size = 16;
  int64_t max_num_batched_tokens = EngineOptions{}.max_num_batched_tokens;
  int64_t max_prefill_tokens = EngineOptions{}.max_prefill_tokens;
  double prefill_attention_cost = EngineOptions{}.prefill_attention_cost;
  int32_t max_num_seqs = 256;
  std::string policy = "fcfs";
  int64_t max_model_len = 0;
  int32_t num_threads = 0;
  bool no_prefix_caching = false;
  int32_t kv_chunk_tokens = KvTierOptions{}.chunk_tokens;
  std::string kv_cpu_bytes = "0";  // RAM tier; 0 = off
  std::string kv_disk_dir;         // empty = off
  std::string kv_disk_bytes = "16GiB";
  std::string kv_remote;  // redis://host:port; empty = off
  std::string kv_remote_password;
};

// Registers the flags on `app`, writing into `flags` (which must outlive it).
void add_engine_flags(CLI::App* app, EngineFlags* flags);
// Validated EngineOptions from parsed flags.
Result<EngineOptions> to_engine_options(const EngineFlags& flags);
// "2GiB", "512MiB", "1.5G", "1048576" -> bytes (K/M/G are powers of 1024).
Result<size_t> parse_byte_size(const std::string& text);

}  // namespace strata::cli
