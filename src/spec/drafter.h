// Drafter: proposes tokens that are likely to follow a request's tokens,
// for the target model to verify in one step (speculative decoding). A
// drafter never decides what is generated: a wrong draft costs compute, not
// correctness, because verification keeps only what the model itself would
// have produced (or, when sampling, what keeps its distribution).
//
// The scheduler calls propose() for each decoding request it grants drafts,
// on the engine thread; finish() when a request ends, so a drafter that
// learns across requests (suffix) can add its output. Not thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata {

class Drafter {
 public:
  virtual ~Drafter() = default;

  // Appends at most `max_drafts` (>= 1) tokens to `out` that may follow
  // `tokens` (the request's prompt then its output so far, the first
  // `num_prompt_tokens` being the prompt); none when it has no guess.
  // Returns the length of the match of the latest tokens the drafts follow
  // (the selector's evidence of their worth, see match_class), 0 with none.
  virtual int32_t propose(uint64_t request_id, std::span<const int32_t> tokens,
                          int64_t num_prompt_tokens, int32_t max_drafts,
                          std::vector<int32_t>* out) = 0;
  // The request ended with these tokens (prompt then output).
  virtual void finish(uint64_t request_id, std::span<const int32_t> tokens,
                      int64_t num_prompt_tokens) {
    (void)request_id;
    (void)tokens;
    (void)num_prompt_tokens;
  }
};

}  // namespace strata
