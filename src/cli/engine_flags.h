// Engine flags: adds every knob of EngineOptions (--kv-cache-memory,
// --block-size, --max-num-batched-tokens, --max-prefill-tokens,
// --prefill-attention-cost, --max-num-seqs, --policy, --priority-aging,
// --max-model-len, --allow-long-max-model-len, -t/--threads, --no-prefix-caching, and the KV tiers:
// --kv-chunk-tokens, --kv-cpu-bytes, --kv-disk-dir, --kv-disk-bytes,
// --kv-remote, --kv-remote-password, --kv-remote-timeout,
// --kv-max-pending-store-bytes, and --speculative-config) to a CLI11 subcommand, so `strata bench
// throughput` and `strata serve` parse them the same way. The defaults are
// EngineOptions' own. Only main() (through these helpers) reads flags.
#pragma once

#include <cstddef>
#include <string>

#include "engine/engine_options.h"
#include "util/status.h"

namespace CLI {
class App;
}

namespace strata::cli {

// "2GiB", "512MiB", "1.5G", "1048576" -> bytes (K/M/G are powers of 1024).
Result<size_t> parse_byte_size(const std::string& text);
// The shortest exact spelling parse_byte_size reads back: "2GiB", "4MiB", "0".
std::string format_byte_size(size_t bytes);

// Flag values: the typed knobs bind straight into `options` (so its
// defaults are the flags' defaults); byte sizes and the policy are text,
// parsed by to_engine_options().
struct EngineFlags {
  EngineOptions options;
  std::string kv_cache_memory = "auto";  // EngineOptions' 0
  std::string policy = scheduling_policy_name(EngineOptions{}.policy);
  bool no_prefix_caching = !EngineOptions{}.enable_prefix_caching;
  std::string kv_cpu_bytes = format_byte_size(KvTierOptions{}.cpu_bytes);  // 0 = RAM tier off
  std::string kv_disk_bytes = format_byte_size(KvTierOptions{}.disk_bytes);
  std::string kv_max_pending_store_bytes =
      format_byte_size(KvTierOptions{}.max_pending_store_bytes);
  std::string speculative_config;  // JSON; empty = off
};

// Registers the flags on `app`, writing into `flags` (which must outlive it).
void add_engine_flags(CLI::App* app, EngineFlags* flags);
// Validated EngineOptions from parsed flags.
Result<EngineOptions> to_engine_options(const EngineFlags& flags);

}  // namespace strata::cli
