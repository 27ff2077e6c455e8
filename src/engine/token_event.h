// TokenEvent: one message on a request's output stream, for one choice.
//
// Each event carries the tokens sampled since the previous event of that
// choice (usually one) and the text they completed. Text is UTF-8-safe (never
// half a code point) and held back while it could be the start of a stop
// string, so the concatenation of a choice's text deltas is exactly its final
// output text. The last event of a choice has is_final set, a finish reason
// and the usage counts. A plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sampler/sampler.h"
#include "sched/request.h"
#include "util/status.h"

namespace strata {

struct TokenUsage {
  int64_t num_prompt_tokens = 0;
  int64_t num_output_tokens = 0;
  int64_t num_cached_prompt_tokens = 0;  // prompt tokens served from the prefix cache
};

struct TokenEvent {
  int32_t choice_index = 0;        // 0..n-1
  std::vector<int32_t> token_ids;  // new tokens
  // Per new token: its logprob and top logprobs (when the request asked for
  // num_logprobs > 0, else empty). [token_ids.size()] or empty.
  std::vector<SampleResult> logprobs;
  std::string text;  // new text (may be empty)

  bool is_final = false;
  FinishReason finish_reason = FinishReason::kNone;  // set when is_final
  // What ended a kStop choice, as vLLM's stop_reason: the stop string that
  // matched, or the request's stop_token_ids entry that was sampled (-1:
  // neither, i.e. the model's end-of-generation token).
  std::string stop_string;
  int32_t stop_token_id = -1;
  // For kError: what went wrong, for the client. error_code says whose
  // fault: kInvalidArgument / kResourceExhausted for a request that can
  // never be served as asked, kInternal for a fault of the server.
  std::string error_message;
  StatusCode error_code = StatusCode::kOk;
  TokenUsage usage;  // set when is_final
};

}  // namespace strata
