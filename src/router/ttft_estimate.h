// TtftEstimate: the router's prediction of a request's time to first token
// on one replica, from what the replica's probe said a moment ago.
//
//   ttft = queue delay + load time + compute time
//   queue delay  = prefill work ahead of it / the replica's prefill rate
//   load time    = tokens it would load from each tier / that tier's rate
//   compute time = tokens nobody holds / the prefill rate
//
// The tokens a replica can serve without compute come from its pool first,
// then from each tier in order (fastest first), each counted from the
// prompt's start: a tier holding 512 leading tokens adds what lies beyond
// the pool's hit, up to 512. At most the whole blocks before the prompt's
// last token count as cached (the engine computes the last token's block). Rates the replica has
// not measured yet fall back to CostModel's defaults. Work the router sent there whose first byte
// has not come back yet may not be in the probe: the queue counts the larger
// of the two, not both. A plain function of plain values.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "engine/prefix_probe.h"

namespace strata::router {

struct CostModel {
  // Used until a replica reports a measured prefill rate.
  double default_prefill_tokens_per_s = 500.0;
  // Tokens per second a tier loads at, by tier name, until measured.
  std::unordered_map<std::string, double> default_tier_tokens_per_s = {
      {"ram", 200000.0}, {"disk", 50000.0}, {"redis", 20000.0}};
  // Used for a tier not in the map.
  double default_other_tier_tokens_per_s = 20000.0;
};

struct TtftEstimate {
  double seconds = 0.0;
  int64_t num_cached_tokens = 0;    // pool + tiers
  int64_t num_pool_tokens = 0;      // of which in the pool
  int64_t num_computed_tokens = 0;  // the rest
  double queue_seconds = 0.0;
};

// `num_prompt_tokens`: the request's prompt. `routed_pending_tokens`: prompt
// tokens the router sent to this replica that have not produced a first
// byte yet.
TtftEstimate estimate_ttft(int64_t num_prompt_tokens, const PrefixProbe& probe,
                           int64_t routed_pending_tokens, const CostModel& model);

}  // namespace strata::router
