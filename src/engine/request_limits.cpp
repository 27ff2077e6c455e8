#include "engine/request_limits.h"

#include <string>

namespace strata {

Status RequestLimits::check(const GenerationRequest& request) const {
  if (request.prompt_tokens.empty()) return invalid_argument("request: the prompt is empty");
  for (int32_t id : request.prompt_tokens) {
    if (id < 0 || id >= vocab_size) {
      return invalid_argument("request: prompt token id " + std::to_string(id) +
                              " is outside the vocabulary [0, " + std::to_string(vocab_size) + ")");
    }
  }
  if (request.n < 1 || request.n > 256) return invalid_argument("request: n must be in [1, 256]");
  if (request.max_tokens < 1) return invalid_argument("request: max_tokens must be >= 1");
  if (request.min_tokens < 0 || request.min_tokens > request.max_tokens) {
    return invalid_argument("request: min_tokens must be in [0, max_tokens]");
  }
  for (int32_t id : request.stop_token_ids) {
    if (id < 0 || id >= vocab_size) {
      return invalid_argument("request: stop token id " + std::to_string(id) +
                              " is outside the vocabulary");
    }
  }
  STRATA_RETURN_IF_ERROR(request.sampling.validate(vocab_size));
  const int64_t num_prompt = static_cast<int64_t>(request.prompt_tokens.size());
  const int64_t max_total = num_prompt + request.max_tokens;
  if (max_total > max_model_len) {
    return invalid_argument("request: prompt (" + std::to_string(num_prompt) +
                            " tokens) + max_tokens (" + std::to_string(request.max_tokens) +
                            ") exceeds --max-model-len " + std::to_string(max_model_len) +
                            "; shorten the prompt or lower max_tokens");
  }
  // The last sampled token never needs K/V.
  const int64_t needed_blocks = (max_total - 1 + block_size - 1) / block_size;
  if (needed_blocks > num_kv_blocks) {
    return invalid_argument("request: needs " + std::to_string(needed_blocks) + " KV blocks (" +
                            std::to_string(max_total - 1) + " tokens) but the whole pool has " +
                            std::to_string(num_kv_blocks) +
                            "; raise --kv-cache-memory or lower max_tokens");
  }
  return Status::ok();
}

}  // namespace strata
