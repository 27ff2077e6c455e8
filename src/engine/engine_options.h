// EngineOptions: every knob of the serving engine, each with its default and
// meaning. A plain value, validated once by Engine/EngineCore creation; only
// main() fills it from flags (src/cli/engine_flags.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/roofline.h"
#include "kv/kv_cache_manager.h"
#include "kvtier/kv_tier_options.h"
#include "model/model_config.h"
#include "sched/scheduler_options.h"
#include "spec/speculative_config.h"
#include "util/status.h"

namespace strata {

struct EngineOptions {
  // Tokens per KV block (--block-size). 1..1024.
  int32_t block_size = 16;
  // Bytes of KV cache across all layers (--kv-cache-memory). The pool holds
  // as many blocks as fit. 0 = auto: what max_num_seqs requests of
  // max_model_len tokens can fill, at most kMaxAutoKvCacheBytes (see
  // resolved_kv_cache_memory_bytes), so a small model or a short context
  // does not reserve memory no request can use.
  size_t kv_cache_memory_bytes = 0;
  // The auto budget's cap: 2 GiB holds ~93k tokens of a TinyLlama-1.1B-shaped
  // model (fp16 K/V, 22 layers, 4 KV heads of 64), ~1/10 of a 24 GiB host.
  static constexpr size_t kMaxAutoKvCacheBytes = size_t{2} << 30;
  // Most tokens one step computes, decodes and prefill chunks together
  // (--max-num-batched-tokens); also caps the running requests (each needs
  // its decode token every step), so it is >= max_num_seqs by default. A
  // step with no decodes (a lone prompt) prefills up to this many tokens.
  int64_t max_num_batched_tokens = 512;
  // Most prompt tokens per step while any request decodes
  // (--max-prefill-tokens), each counted 1 + p / L by its position p (see
  // prefill_attention_cost): the chunked-prefill knob. The default comes
  // from the sweep in docs/engine_tuning.md (targets: the decoding streams'
  // p99 inter-token latency <= 3x idle, a long prompt's TTFT <= 1.5x solo).
  int64_t max_prefill_tokens = 36;
  // How much a prompt token's attention adds to its share of
  // max_prefill_tokens (--prefill-attention-cost; 0 = count tokens only):
  // the time of one attention MAC relative to one weight-matmul MAC on this
  // CPU's kernels, so that a token at position p counts
  // 1 + p * cost * attention_macs / matmul_macs
  // (SchedulerOptions::prefill_cost_context_len). See docs/engine_tuning.md.
  double prefill_attention_cost = 4.0;
  // Most requests running at once (--max-num-seqs).
  int32_t max_num_seqs = 256;
  // Longest prompt + output (--max-model-len); 0 = the model's context length.
  int64_t max_model_len = 0;
  // Whether max_model_len may exceed the context length the model was
  // trained for (--allow-long-max-model-len, like vLLM's
  // VLLM_ALLOW_LONG_MAX_MODEL_LEN): positions past it are untrained, so
  // without this check_model() refuses such a length.
  bool allow_long_max_model_len = false;
  // Who runs first (--policy fcfs|priority).
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  // Priority aging (--priority-aging seconds; priority policy only): each
  // this long spent waiting counts as one priority level better, so a
  // low-priority request cannot starve behind a stream of better ones.
  // 0 = strict priority. 0..1000.
  double priority_aging_s = 0.0;
  // Kernel threads (-t/--threads); 0 = all hardware threads.
  int32_t num_threads = 0;
  // Share full KV blocks between requests with equal prefixes
  // (--no-prefix-caching turns it off).
  bool enable_prefix_caching = true;
  // The tiered KV cache beneath the pool (--kv-chunk-tokens, --kv-cpu-bytes,
  // --kv-disk-dir, --kv-disk-bytes, --kv-remote, --kv-remote-password): full
  // chunks are stored asynchronously, and an admitted prompt loads the chunks
  // that follow the pool's own prefix hit. Off unless a tier is configured;
  // needs prefix caching (loaded blocks join the pool's prefix cache).
  KvTierOptions kv_tiers;
  // Speculative decoding (--speculative-config, JSON as vLLM takes it):
  // a drafter proposes tokens, one step verifies them, and the output is
  // what it would have been without (see docs/speculative.md). Off by
  // default.
  SpeculativeConfig speculative;
  // The machine's ceilings (kernels/roofline.h), against which the engine
  // reports each forward phase's roofline floor in its metrics; `strata
  // serve` measures them at start-up (--no-roofline skips that). Unknown
  // (the default): the metrics carry time and work without floors.
  MachineCeilings ceilings;

  Status validate() const;
  // The checks that need the model: max_model_len within its trained
  // context unless allow_long_max_model_len.
  Status check_model(const ModelConfig& config) const;

  // max_model_len, or the model's context length when 0.
  int64_t resolved_max_model_len(const ModelConfig& config) const;
  // kv_cache_memory_bytes, or when 0 the bytes of max_num_seqs requests of
  // resolved_max_model_len tokens (whole blocks each), capped at
  // kMaxAutoKvCacheBytes.
  size_t resolved_kv_cache_memory_bytes(const ModelConfig& config) const;
  // The option structs of the components the engine builds, every field
  // from here (their own initializers are not defaults: they fail
  // validation until set).
  SchedulerOptions scheduler_options(const ModelConfig& config) const;
  KvCacheOptions kv_cache_options(int32_t num_blocks) const;
};

}  // namespace strata
