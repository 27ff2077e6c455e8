#include "cli/engine_flags.h"

#include <CLI/CLI.hpp>
#include <cctype>
#include <cmath>
#include <string>

namespace strata::cli {

void add_engine_flags(CLI::App* app, EngineFlags* f) {
  EngineOptions& o = f->options;
  app->add_option("--kv-cache-memory", f->kv_cache_memory,
                  "KV cache budget in bytes (suffix K/M/G[iB]); sizes the block pool. auto = "
                  "what --max-num-seqs requests of --max-model-len tokens can fill, at most 2GiB")
      ->capture_default_str();
  app->add_option("--block-size", o.block_size, "Tokens per KV block")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app->add_option("--max-num-batched-tokens", o.max_num_batched_tokens,
                  "Most tokens per engine step (chunked prefill budget)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app->add_option("--max-prefill-tokens", o.max_prefill_tokens,
                  "Most prompt tokens per step while requests decode (chunked prefill; later "
                  "tokens of a long prompt count more, see --prefill-attention-cost); 0 = "
                  "--max-num-batched-tokens")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  app->add_option("--prefill-attention-cost", o.prefill_attention_cost,
                  "How much a prompt token's attention counts against --max-prefill-tokens "
                  "(time of an attention MAC / a weight-matmul MAC); 0 = count tokens only")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1000.0));
  app->add_option("--max-num-seqs", o.max_num_seqs, "Most requests running at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app->add_option("--policy", f->policy, "Scheduling policy: fcfs | priority")
      ->capture_default_str()
      ->check(CLI::IsMember({"fcfs", "priority"}));
  app->add_option("--priority-aging", o.priority_aging_s,
                  "Seconds of waiting that count as one priority level better (--policy "
                  "priority); 0 = strict priority")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1000.0));
  app->add_option("--max-model-len", o.max_model_len,
                  "Longest prompt + output; 0 = the model's context length")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app->add_flag("--allow-long-max-model-len", o.allow_long_max_model_len,
                "Accept a --max-model-len beyond the model's trained context (positions past it "
                "are untrained)");
  app->add_option("-t,--threads", o.num_threads, "Kernel threads; 0 = all cores")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  app->add_flag("--no-prefix-caching", f->no_prefix_caching,
                "Do not share KV blocks between requests with equal prefixes");
  app->add_option("--kv-chunk-tokens", o.kv_tiers.chunk_tokens,
                  "Tokens per KV tier chunk (a multiple of --block-size)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app->add_option("--kv-cpu-bytes", f->kv_cpu_bytes,
                  "Host RAM KV tier capacity (suffix K/M/G[iB]); 0 = off")
      ->capture_default_str();
  app->add_option("--kv-disk-dir", o.kv_tiers.disk_dir,
                  "Directory of the persistent disk KV tier (survives restarts); empty = off");
  app->add_option("--kv-disk-bytes", f->kv_disk_bytes, "Disk KV tier capacity (suffix K/M/G[iB])")
      ->capture_default_str();
  app->add_option("--kv-remote", o.kv_tiers.remote_url,
                  "Shared remote KV tier, redis://host:port (replicas reuse each other's chunks)");
  app->add_option("--kv-remote-password", o.kv_tiers.remote_password, "Redis AUTH password");
  app->add_option("--kv-remote-timeout", o.kv_tiers.remote_timeout_ms,
                  "Milliseconds per Redis operation (connect, command)")
      ->capture_default_str()
      ->check(CLI::Range(1, 60'000));
  app->add_option("--kv-max-pending-store-bytes", f->kv_max_pending_store_bytes,
                  "Bytes of chunks queued for the slower tiers; beyond it stores are dropped")
      ->capture_default_str();
  app->add_option("--speculative-config", f->speculative_config,
                  "Speculative decoding, JSON as vLLM takes it: {\"method\": \"ngram\", "
                  "\"num_speculative_tokens\": 4, \"prompt_lookup_min\": 2, "
                  "\"prompt_lookup_max\": 5}; \"gating\": \"off\" drafts on every step "
                  "(default \"cost\": only while measured to pay)");
}

Result<size_t> parse_byte_size(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == 0) return invalid_argument("--kv-cache-memory: '" + text + "' is not a size");
  double value = 0.0;
  try {
    value = std::stod(text.substr(0, i));
  } catch (...) {
    return invalid_argument("--kv-cache-memory: '" + text + "' is not a size");
  }
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double scale = 1.0;
  if (unit.empty() || unit == "B") {
    scale = 1.0;
  } else if (unit == "K" || unit == "KB" || unit == "KIB") {
    scale = 1024.0;
  } else if (unit == "M" || unit == "MB" || unit == "MIB") {
    scale = 1024.0 * 1024.0;
  } else if (unit == "G" || unit == "GB" || unit == "GIB") {
    scale = 1024.0 * 1024.0 * 1024.0;
  } else {
    return invalid_argument("--kv-cache-memory: unknown unit '" + text.substr(i) +
                            "' (use K, M or G)");
  }
  const double bytes = std::floor(value * scale);
  if (!(bytes >= 1.0) || bytes > 1e15) {
    return invalid_argument("--kv-cache-memory: '" + text + "' is out of range");
  }
  return static_cast<size_t>(bytes);
}

std::string format_byte_size(size_t bytes) {
  static constexpr const char* kUnits[] = {"", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kUnits[unit];
}

Result<EngineOptions> to_engine_options(const EngineFlags& f) {
  EngineOptions o = f.options;
  if (f.kv_cache_memory == "auto") {
    o.kv_cache_memory_bytes = 0;
  } else {
    STRATA_ASSIGN_OR_RETURN(o.kv_cache_memory_bytes, parse_byte_size(f.kv_cache_memory));
  }
  STRATA_ASSIGN_OR_RETURN(o.policy, parse_scheduling_policy(f.policy));
  o.enable_prefix_caching = !f.no_prefix_caching;
  auto parse = [](const char* flag, const std::string& text, size_t* out) -> Status {
    Result<size_t> v = text == "0" ? Result<size_t>(size_t{0}) : parse_byte_size(text);
    if (!v) return invalid_argument(std::string(flag) + ": '" + text + "' is not a size");
    *out = *v;
    return Status::ok();
  };
  STRATA_RETURN_IF_ERROR(parse("--kv-cpu-bytes", f.kv_cpu_bytes, &o.kv_tiers.cpu_bytes));
  STRATA_RETURN_IF_ERROR(parse("--kv-disk-bytes", f.kv_disk_bytes, &o.kv_tiers.disk_bytes));
  STRATA_RETURN_IF_ERROR(parse("--kv-max-pending-store-bytes", f.kv_max_pending_store_bytes,
                               &o.kv_tiers.max_pending_store_bytes));
  STRATA_ASSIGN_OR_RETURN(o.speculative, SpeculativeConfig::parse(f.speculative_config));
  STRATA_RETURN_IF_ERROR(o.validate());
  return o;
}

}  // namespace strata::cli
