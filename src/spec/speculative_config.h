// SpeculativeConfig: what --speculative-config asks for, parsed from the
// JSON object vLLM takes under that name:
//   {"method": "ngram", "num_speculative_tokens": 4,
//    "prompt_lookup_min": 2, "prompt_lookup_max": 5}
// method "ngram" (prompt lookup over the request's prompt and output) or
// "suffix" (a suffix tree over the request's prompt, its output and earlier
// requests' outputs; fields suffix_decoding_max_tree_depth,
// suffix_decoding_max_cached_requests, suffix_decoding_max_spec_factor,
// suffix_decoding_min_token_prob as vLLM names them). prompt_lookup_min/max
// follow vLLM: when neither is given both are 5, when one is given the
// other takes its value.
//
// strata's own field: "gating": "cost" (default: speculate only while the
// measured tokens per second with drafts beat those without, see
// SpeculationGate) or "off" (always draft; tests use it to exercise
// verification on every step). Any other field, a wrong type or a bad value
// is an error naming it. A plain value; validated once at start-up.
#pragma once

#include <cstdint>
#include <string>

#include "util/status.h"

namespace strata {

enum class SpeculativeMethod { kNone, kNgram, kSuffix };

const char* speculative_method_name(SpeculativeMethod method);

struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::kNone;  // kNone: no speculation
  // Drafts proposed (and verified in one step) per request: 1..kMaxDrafts.
  int32_t num_speculative_tokens = 0;
  static constexpr int32_t kMaxDrafts = 32;
  // ngram: the longest and shortest suffix of the request's tokens looked up
  // in its earlier tokens (the longest match found wins). 1 <= min <= max.
  int32_t prompt_lookup_min = 5;
  int32_t prompt_lookup_max = 5;
  // suffix: vLLM's suffix_decoding_* fields (see spec/suffix_drafter.h):
  // the deepest path stored (1..256), finished outputs kept for the global
  // tree (0..1,000,000), drafts at most this factor x the match length
  // (> 0), and the path probability below which a draft stops ([0, 1]).
  int32_t suffix_max_tree_depth = 24;
  int32_t suffix_max_cached_requests = 1000;
  double suffix_max_spec_factor = 1.0;
  double suffix_min_token_prob = 0.1;
  // Gate drafting by measured cost (true), or draft on every step.
  bool cost_gating = true;

  bool enabled() const { return method != SpeculativeMethod::kNone; }
  Status validate() const;
  // The config as JSON, as parse() reads it back (start-up log).
  std::string to_json() const;

  // Parses --speculative-config's JSON text; "" means off.
  static Result<SpeculativeConfig> parse(const std::string& json_text);
};

}  // namespace strata
