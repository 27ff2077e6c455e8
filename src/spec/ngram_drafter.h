// NgramDrafter: prompt lookup decoding (vLLM's "ngram" method). The last n
// tokens of the request (prompt + output), for n from prompt_lookup_max
// down to prompt_lookup_min, are looked up among its earlier tokens; the
// tokens that followed the match are the drafts. The longest match wins,
// the latest one among equally long matches (recent context predicts best).
// Pays when the output repeats its input: code edits, quoting summaries,
// extraction. Stateless; O(tokens) per proposal.
#pragma once

#include "spec/drafter.h"

namespace strata {

class NgramDrafter : public Drafter {
 public:
  // 1 <= min_n <= max_n.
  NgramDrafter(int32_t min_n, int32_t max_n) : min_n_(min_n), max_n_(max_n) {}

  int32_t propose(uint64_t request_id, std::span<const int32_t> tokens, int64_t num_prompt_tokens,
                  int32_t max_drafts, std::vector<int32_t>* out) override;

  // The same lookup as a plain function (tests): where the continuation
  // starts, or -1 without a match; the match's length in *match_length.
  static int64_t find_continuation(std::span<const int32_t> tokens, int32_t min_n, int32_t max_n,
                                   int32_t* match_length = nullptr);

 private:
  int32_t min_n_;
  int32_t max_n_;
};

}  // namespace strata
