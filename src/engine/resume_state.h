// ResumeState: what one engine hands another to continue a running request
// (migration off a draining decode worker, docs/disagg.md "Migration").
//
// The state is small and exact: the prompt's token ids, the output token ids
// produced so far, and the sampler's PRNG position (the choice's seed and the
// number of draws made). Everything else the sampler holds - penalty counts,
// the prompt set - is a pure function of those tokens, and so are the
// detokenizer's and stop-string matcher's positions and a grammar matcher's:
// the receiving engine replays the output tokens through them (emitting
// nothing), so its text continues byte-exactly where the sender's stopped.
// Drafts (speculative decoding) are not state: the receiver drafts afresh.
//
// The KV is not in the state: the receiver's KV connector pulls the KV of
// prompt + outputs by content from `kv_peer` (the sender's KV transfer
// channel) and computes whatever it cannot get or verify.
//
// The JSON codec (the wire record between server, router and server)
// checks every field; anything malformed is an invalid_argument naming the
// field, for a 400.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "util/status.h"

namespace strata {

struct ResumeState {
  std::vector<int32_t> prompt_tokens;  // non-empty
  std::vector<int32_t> output_tokens;  // produced so far (may be empty)
  uint64_t seed = 0;                   // the choice's effective sampling seed
  uint64_t rng_draws = 0;              // PRNG draws made (<= 2 per output token)
  // HOST:PORT of the sender's KV transfer channel; empty: the receiver
  // computes the KV itself.
  std::string kv_peer;
  // The response's id and created time, so the client sees one response.
  std::string response_id;
  int64_t created = 0;

  // Structural checks (the codec runs them; vocabulary bounds are the
  // engine's check_request()).
  Status validate() const;
};

nlohmann::json resume_state_to_json(const ResumeState& state);
Result<ResumeState> resume_state_from_json(const nlohmann::json& json);

}  // namespace strata
