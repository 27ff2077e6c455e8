// Request: one generation request as the scheduler tracks it, from
// admission to finish.
//
// RequestSpec is what a caller hands to Scheduler::add_request (already
// tokenized and validated by the engine/server). Request adds the serving
// state. The one token-budget model: tokens() = prompt + output so far;
// num_computed_tokens counts the leading tokens whose K/V is in the cache.
// Each step grants a request some of the missing tokens; a prefill chunk, a
// prefix-cache hit, a decode and a recompute after preemption all just move
// num_computed_tokens towards num_tokens(). The request samples in the step
// that makes them equal.
//
// Owned by the Scheduler; the engine reads it between steps through
// Scheduler::find(). Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kv/block_hash.h"
#include "sampler/sampler.h"
#include "spec/draft_selector.h"

namespace strata {

class TokenMaskCache;  // grammar/: handed to the executor, never read here

using RequestId = uint64_t;

enum class RequestStatus {
  kWaiting,   // in the waiting queue (new, or preempted and to be recomputed)
  kRunning,   // holds KV blocks and is scheduled every step
  kFinished,  // done; reported once by update() or abort()
};

enum class FinishReason {
  kNone,
  kStop,    // an EOS / stop token (or a stop string, reported by the engine)
  kLength,  // max_tokens or max_model_len reached
  kAbort,   // aborted by the caller (client gone, timeout)
  kError,   // the runner failed for this request alone
};

const char* finish_reason_name(FinishReason reason);

struct RequestSpec {
  RequestId id = 0;                    // caller-chosen, unique among live requests
  std::vector<int32_t> prompt_tokens;  // non-empty
  // Output length bounds. 1 <= max_tokens; 0 <= min_tokens <= max_tokens.
  int32_t max_tokens = 16;
  int32_t min_tokens = 0;
  // Every token that ends the request: the caller decides the set once
  // (the engine: the request's stop_token_ids plus the model's
  // end-of-generation tokens unless ignore_eos). Before min_tokens outputs
  // they cannot end it; StepPlan asks the executor to mask them out of
  // sampling then.
  std::vector<int32_t> stop_token_ids;
  // Lower runs first under the priority policy; ignored under fcfs.
  int32_t priority = 0;
  // Separates prefix-cache namespaces: equal prompts with different salts
  // share no KV block.
  std::string cache_salt;
  // For n > 1: the id of a sibling that computes the same prompt. This
  // request is not admitted while that sibling still has prompt tokens to
  // compute, so it then finds the prompt's full blocks in the prefix cache.
  // 0 = none.
  RequestId prefix_source_id = 0;
  SamplingParams sampling;  // handed to the executor in the first step's plan; unused here
  // Optional output grammar, handed to the executor likewise; unused here.
  std::shared_ptr<const TokenMaskCache> grammar;
};

struct Request {
  // Everything but the prompt, which moves into `tokens` at admission
  // (spec.prompt_tokens is then empty).
  RequestSpec spec;
  // prompt + output so far, contiguous: [num_tokens()].
  std::vector<int32_t> tokens;
  int64_t num_prompt_tokens = 0;
  RequestStatus status = RequestStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;

  int64_t num_computed_tokens = 0;
  // Chained keys of the full blocks of `tokens` (kv/block_hash.h), kept up
  // to date as tokens are appended; empty when prefix caching is off.
  std::vector<BlockHash> block_hashes;
  // Admission order: FCFS order and the tie-break of every policy. Kept
  // across preemption, so a preempted request keeps its place.
  uint64_t arrival_seq = 0;
  int64_t arrival_ns = 0;
  int64_t first_scheduled_ns = -1;       // -1 until first in a plan
  int64_t num_cached_prompt_tokens = 0;  // prefix hits at first admission
  int32_t num_preemptions = 0;
  // Pipeline micro-batches: the request's step is in a plan whose result
  // has not come back (Scheduler::schedule_micro_batch); it is neither
  // scheduled nor preempted until update() consumes that plan.
  bool is_in_flight = false;
  // Speculative decoding: how its drafts fared by match class, for the
  // draft selector; the class of the drafts its step in flight verifies;
  // and a proposal the selector dropped (of class `shadow_class`), checked
  // against the tokens that follow (`shadow_matched` of them so far) and
  // then added to the records.
  ClassRecords draft_records;
  int32_t verifying_class = 0;
  std::vector<int32_t> shadow_drafts;
  int32_t shadow_class = 0;
  int32_t shadow_matched = 0;

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }
  int64_t num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  std::span<const int32_t> prompt_tokens() const {
    return std::span<const int32_t>(tokens).first(num_prompt_tokens);
  }
  std::span<const int32_t> output_tokens() const {
    return std::span<const int32_t>(tokens).subspan(num_prompt_tokens);
  }
  bool is_prefilling() const { return num_computed_tokens < num_prompt_tokens; }
};

}  // namespace strata
