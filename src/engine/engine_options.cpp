#include "engine/engine_options.h"

namespace strata {

Status EngineOptions::validate() const {
  if (block_size < 1 || block_size > 1024) {
    return invalid_argument("engine: --block-size must be in [1, 1024]");
  }
  if (kv_cache_memory_bytes == 0) return invalid_argument("engine: --kv-cache-memory must be > 0");
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

}  // namespace strata
