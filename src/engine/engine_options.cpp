#include "engine/engine_options.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/kv_storage.h"

namespace strata {
namespace {

// The context length at which a prompt token's attention costs as much as
// its weight matmuls (see prefill_attention_cost); 0 = off.
int64_t prefill_cost_context_len(const ModelConfig& c, double attention_cost) {
  if (attention_cost <= 0.0) return 0;
  const double hidden = static_cast<double>(c.hidden_dim);
  const double matmul_macs =
      static_cast<double>(c.num_layers) *
      (hidden * static_cast<double>(c.q_dim() + 2 * c.kv_dim()) +
       static_cast<double>(c.q_dim()) * hidden + 3.0 * hidden * static_cast<double>(c.ffn_dim));
  // Scores and the weighted sum of V: two MACs per head dimension.
  const double attention_macs_per_position = static_cast<double>(c.num_layers) *
                                             static_cast<double>(c.num_heads) *
                                             static_cast<double>(c.head_dim) * 2.0;
  const double len = matmul_macs / (attention_macs_per_position * attention_cost);
  return std::max<int64_t>(1, static_cast<int64_t>(std::llround(len)));
}

}  // namespace

Status EngineOptions::validate() const {
  STRATA_RETURN_IF_ERROR(speculative.validate());
  if (block_size < 1 || block_size > 1024) {
    return invalid_argument("engine: --block-size must be in [1, 1024]");
  }
  if (max_num_batched_tokens < 1) {
    return invalid_argument("engine: --max-num-batched-tokens must be >= 1");
  }
  if (max_prefill_tokens < 0) {
    return invalid_argument("engine: --max-prefill-tokens must be >= 0");
  }
  if (!(prefill_attention_cost >= 0.0 && prefill_attention_cost <= 1000.0)) {
    return invalid_argument("engine: --prefill-attention-cost must be in [0, 1000]");
  }
  if (max_num_seqs < 1) return invalid_argument("engine: --max-num-seqs must be >= 1");
  if (!(priority_aging_s >= 0.0 && priority_aging_s <= 1000.0)) {
    return invalid_argument("engine: --priority-aging must be in [0, 1000] seconds");
  }
  if (max_model_len < 0 || max_model_len == 1) {
    return invalid_argument("engine: --max-model-len must be 0 (the model's) or >= 2");
  }
  if (num_threads < 0 || num_threads > 1024) {
    return invalid_argument("engine: --threads must be in [0, 1024]");
  }
  if (kv_tiers.enabled()) {
    STRATA_RETURN_IF_ERROR(kv_tiers.validate(block_size));
    if (!enable_prefix_caching) {
      return invalid_argument(
          "engine: the KV tiers (--kv-cpu-bytes, --kv-disk-dir, --kv-remote) need prefix caching; "
          "drop --no-prefix-caching");
    }
  }
  return Status::ok();
}

Status EngineOptions::check_model(const ModelConfig& config) const {
  if (max_model_len > config.context_length && !allow_long_max_model_len) {
    return invalid_argument("engine: --max-model-len " + std::to_string(max_model_len) +
                            " exceeds the model's trained context of " +
                            std::to_string(config.context_length) +
                            " tokens (positions past it are untrained); lower it, or pass "
                            "--allow-long-max-model-len to use it anyway");
  }
  return Status::ok();
}

int64_t EngineOptions::resolved_max_model_len(const ModelConfig& config) const {
  return max_model_len > 0 ? max_model_len : config.context_length;
}

size_t EngineOptions::resolved_kv_cache_memory_bytes(const ModelConfig& config) const {
  if (kv_cache_memory_bytes > 0) return kv_cache_memory_bytes;
  const int64_t blocks_per_request =
      (resolved_max_model_len(config) + block_size - 1) / std::max(block_size, 1);
  // In doubles: max_num_seqs x blocks x bytes can exceed size_t's range.
  const double usable_bytes = static_cast<double>(max_num_seqs) *
                              static_cast<double>(blocks_per_request) *
                              static_cast<double>(KvStorage::bytes_per_block(config, block_size));
  if (usable_bytes >= static_cast<double>(kMaxAutoKvCacheBytes)) return kMaxAutoKvCacheBytes;
  return std::max<size_t>(1, static_cast<size_t>(usable_bytes));
}

SchedulerOptions EngineOptions::scheduler_options(const ModelConfig& config) const {
  SchedulerOptions o;
  o.max_num_seqs = max_num_seqs;
  o.max_num_batched_tokens = max_num_batched_tokens;
  o.max_prefill_tokens = max_prefill_tokens;
  o.prefill_cost_context_len = prefill_cost_context_len(config, prefill_attention_cost);
  o.max_model_len = resolved_max_model_len(config);
  o.policy = policy;
  o.priority_aging_ns = static_cast<int64_t>(std::llround(priority_aging_s * 1e9));
  return o;
}

KvCacheOptions EngineOptions::kv_cache_options(int32_t num_blocks) const {
  KvCacheOptions o;
  o.block_size = block_size;
  o.num_blocks = num_blocks;
  o.enable_prefix_caching = enable_prefix_caching;
  return o;
}

}  // namespace strata
