// EngineOptions: every knob of the serving engine, each with its default and
// meaning. A plain value, validated once by Engine/EngineCore creation; only
// main() fills it from flags (src/cli/engine_flags.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvtier/kv_tier_options.h"
#include "sched/scheduler_options.h"
#include "util/status.h"

namespace strata {

struct EngineOptions {
  // Tokens per KV block (--block-size). 1..1024.
  int32_t block_size = 16;
  // Bytes of KV cache across all layers (--kv-cache-memory). The pool holds
  // as many blocks as fit; it is never sized from max_model_len x
  // max_num_seqs. 2 GiB holds ~93k tokens of a TinyLlama-1.1B-shaped model
  // (fp16 K/V, 22 layers, 4 KV heads of 64) and ~1/10 of a 24 GiB host.
  size_t kv_cache_memory_bytes = size_t{2} << 30;
  // Most tokens one step computes, decodes and prefill chunks together
  // (--max-num-batched-tokens); also caps the running requests (each needs
  // its decode token every step), so it is >= max_num_seqs by default. A
  // step with no decodes (a lone prompt) prefills up to this many tokens.
  int64_t max_num_batched_tokens = 512;
  // Most prompt tokens per step while any request decodes
  // (--max-prefill-tokens), each counted 1 + p / L by its position p (see
  // prefill_attention_cost): the chunked-prefill knob. Chosen by the sweep
  // `bench/serving_core.sh BUILD chunked` (8 decoding streams + a 4000-token
  // prompt, TinyLlama-1.1B shape, Q8_0, 2 threads), whose targets are the
  // streams' p99 inter-token latency <= 3x their idle ITL and the prompt's
  // TTFT <= 1.5x its solo TTFT. A step costs about idle + the chunk's work,
  // so at p99 = 3x idle the chunks get 2/3 of each step and the TTFT is
  // 1.5x solo exactly when a chunk costs what a solo prefill does: the
  // targets are met only because a chunk's matmul rows partly hide under
  // the decodes' weight streaming, and only if every step costs about the
  // same, which counting attention (the context term) provides; with plain
  // token counts the last, long-context chunks set the p99. Measured
  // (idle ITL ~31 ms, solo TTFT 12.1 s), cost 4: 24 -> p99 2.45x idle, TTFT
  // 1.74x solo; 32 -> 2.84x, 1.51x; 36 -> 2.96x, 1.40x; 40 -> 3.16x,
  // 1.35x; 64 -> 4.2x, 1.16x. Cost 0 (tokens only): 16 -> 3.07x, 1.59x;
  // 24 -> 3.96x, 1.35x. GPU servers use 2048+; on this CPU that freezes the
  // streams for seconds (p99 109x idle).
  int64_t max_prefill_tokens = 36;
  // How much a prompt token's attention adds to its share of
  // max_prefill_tokens (--prefill-attention-cost; 0 = count tokens only).
  // A token at position p does (matmul MACs per token) of weight work and
  // p * (attention MACs per position) of attention; this is the time one
  // attention MAC takes relative to one weight-matmul MAC on this CPU's
  // kernels, so that the token counts 1 + p * cost * attention_macs /
  // matmul_macs (SchedulerOptions::prefill_cost_context_len; for the
  // TinyLlama shape L = 10753 / cost positions). With 4 the chunk steps.
  // p99 stays within 8-15% of their median in the sweep above (0: ~30%).
  double prefill_attention_cost = 4.0;
  // Most requests running at once (--max-num-seqs).
  int32_t max_num_seqs = 256;
  // Longest prompt + output (--max-model-len); 0 = the model's context length.
  int64_t max_model_len = 0;
  // Who runs first (--policy fcfs|priority).
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
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

  Status validate() const;
};

}  // namespace strata
