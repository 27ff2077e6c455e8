#include "spec/ngram_drafter.h"

#include <algorithm>

namespace strata {

int64_t NgramDrafter::find_continuation(std::span<const int32_t> tokens, int32_t min_n,
                                        int32_t max_n, int32_t* match_length) {
  const int64_t len = static_cast<int64_t>(tokens.size());
  if (len < static_cast<int64_t>(min_n) + 1) return -1;
  const int32_t last = tokens[len - 1];
  int64_t best_len = 0;
  int64_t best_end = -1;  // index of the last matched token
  // Scan candidate match ends j (< len - 1, so a continuation exists) from
  // the latest back; the first match of max_n tokens ends the scan.
  for (int64_t j = len - 2; j >= 0; --j) {
    if (tokens[j] != last) continue;
    int64_t m = 1;
    while (m < max_n && j - m >= 0 && tokens[j - m] == tokens[len - 1 - m]) ++m;
    if (m > best_len) {
      best_len = m;
      best_end = j;
      if (m >= max_n) break;
    }
  }
  if (best_len < min_n) return -1;
  if (match_length != nullptr) *match_length = static_cast<int32_t>(best_len);
  return best_end + 1;
}

int32_t NgramDrafter::propose(uint64_t /*request_id*/, std::span<const int32_t> tokens,
                              int64_t /*num_prompt_tokens*/, int32_t max_drafts,
                              std::vector<int32_t>* out) {
  int32_t match = 0;
  const int64_t start = find_continuation(tokens, min_n_, max_n_, &match);
  if (start < 0) return 0;
  // A continuation that runs into the end of the tokens goes on with the
  // drafts themselves: a repeating cycle shorter than max_drafts still
  // yields max_drafts tokens.
  const int64_t len = static_cast<int64_t>(tokens.size());
  const size_t first = out->size();
  for (int64_t i = 0; i < max_drafts; ++i) {
    const int64_t at = start + i;
    out->push_back(at < len ? tokens[at] : (*out)[first + static_cast<size_t>(at - len)]);
  }
  return match;
}

}  // namespace strata
