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
  // (--max-prefill-tokens); the chunked-prefill knob, chosen by the sweep
  // `bench/serving_core.sh BUILD chunked` (8 decoding streams + a 4000-token
  // prompt, TinyLlama-1.1B shape, Q8_0, 2 threads). A step costs about
  // idle + k * c for k prompt tokens; keeping the streams' ITL <= 3x idle
  // allows k <= 2 * idle / c, and then the prompt advances at 2 / (3c), i.e.
  // its TTFT is exactly 1.5x solo when chunks cost what a solo prefill does.
  // They cost more (small GEMMs, and each long-context token's attention):
  // measured with the AVX-512 kernels, idle ITL 31 ms, solo TTFT 17.9 s;
  // chunk 16: p99 ITL 5.2x, TTFT 1.84x; 24: 6.4x, 1.48x; 32: 8.3x, 1.30x;
  // 64: 14x, 1.10x. 24 is the smallest chunk with TTFT <= 1.5x solo. GPU
  // servers use 2048+; on this CPU that freezes the streams for seconds.
  int64_t max_prefill_tokens = 24;
  // How much a prompt token's attention adds to its share of
  // max_prefill_tokens (--prefill-attention-cost; 0 = count tokens only).
  // A token at position p does (matmul MACs per token) of weight work and
  // p * (attention MACs per position) of attention; this is the time one
  // attention MAC takes relative to one weight-matmul MAC on this CPU's
  // kernels, so that the token counts 1 + p * cost * attention_macs /
  // matmul_macs (SchedulerOptions::prefill_cost_context_len). Measured: see
  // the sweep above.
  double prefill_attention_cost = 3.0;
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
