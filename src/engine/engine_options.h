// EngineOptions: every knob of the serving engine, each with its default and
// meaning. A plain value, validated once by Engine/EngineCore creation; only
// main() fills it from flags (src/cli/engine_flags.h).
#pragma once

#include <cstddef>
#include <cstdint>

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
  // (--max-prefill-tokens); the chunked-prefill knob. Chosen by the sweep
  // (bench/serving_core.sh chunked: 8 decoding streams + a 4000-token prompt,
  // TinyLlama-1.1B shape, Q8_0, 2 threads). A step costs about
  // idle + c * prefill_tokens, with c (~35-40 ms/token) close to the solo
  // prefill cost, so keeping the streams' ITL <= 3x idle allows ~2 * idle / c
  // ~ 16 prefill tokens beside 8 decodes, which also keeps the long prompt's
  // TTFT <= 1.5x solo. Measured at 24: median ITL 2.9x idle, TTFT 1.40x solo
  // (p99 ITL 4.7x on the loaded shared host); 16: TTFT 2.05x; 32+: ITL >= 5x.
  // GPU servers use 2048+; on this CPU that froze the streams for 90 s.
  int64_t max_prefill_tokens = 24;
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

  Status validate() const;
};

}  // namespace strata
