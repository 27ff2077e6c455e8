// RequestLimits: what a GenerationRequest must satisfy to be served by an
// engine, checked before it is queued so that a request that can never run
// is refused at once with a message for the client naming the knob.
// A plain value; check() is thread-safe.
#pragma once

#include <cstdint>

#include "engine/generation_request.h"
#include "util/status.h"

namespace strata {

struct RequestLimits {
  int32_t vocab_size = 0;
  int64_t max_model_len = 0;  // --max-model-len, resolved
  int32_t block_size = 0;
  int64_t num_kv_blocks = 0;  // the whole pool

  // kInvalidArgument unless: a non-empty prompt of ids in the vocabulary,
  // n in [1, 256], 1 <= max_tokens, 0 <= min_tokens <= max_tokens, stop ids
  // in the vocabulary, valid sampling parameters, prompt + max_tokens within
  // --max-model-len, and a KV need the whole pool can hold (the message
  // names --kv-cache-memory).
  Status check(const GenerationRequest& request) const;
};

}  // namespace strata
