// RoutePolicy: which replica gets a request, best first (the rest of the
// order is where a retry goes).
//
//   cache-aware  lowest predicted TTFT (TtftEstimate) from each replica's
//                probe; a replica whose probe did not come back in time is
//                scored by load alone (as if it held nothing). Measured
//                prefill rates are clamped to within 2x of the candidates'
//                median (one noisy measurement must not outweigh a prefix);
//                a replica that has measured none is taken at the median. Ties go to
//                the replica with fewer requests in flight from this router,
//                then to the lower index.
//   least-load   fewest requests waiting + running (probe), or in flight
//                from this router when there is no probe.
//   round-robin  the next replica after the last one chosen.
//   session      consistent hashing of the session key (the request's
//                `user` or X-Session-Id) over every replica: the key's home,
//                then the ring's order, skipping replicas that are not
//                candidates; without a key, cache-aware.
//
// Only the candidates passed in are considered (the caller leaves out
// ejected and draining replicas). Not thread-safe (round-robin's cursor):
// the router guards it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/prefix_probe.h"
#include "router/consistent_hash_ring.h"
#include "router/ttft_estimate.h"
#include "util/status.h"

namespace strata::router {

enum class Policy { kCacheAware, kLeastLoad, kRoundRobin, kSession };
Result<Policy> parse_policy(
    std::string_view name);  // cache-aware | least-load | round-robin | session
const char* policy_name(Policy policy);

// One replica as the policy sees it.
struct Candidate {
  size_t replica = 0;  // index into the router's replica list
  std::string url;     // the ring's member name
  std::optional<PrefixProbe> probe;
  int64_t num_in_flight = 0;          // requests from this router, unfinished
  int64_t routed_pending_tokens = 0;  // prompt tokens sent, no first byte yet
};

struct RouteRequest {
  int64_t num_prompt_tokens = 0;
  std::string session_key;  // empty: none
};

struct RouteChoice {
  std::vector<size_t> order;  // indices into the candidates, best first
  // The predicted TTFT and cached tokens of order[0] (cache-aware and
  // session policies; 0 otherwise).
  std::optional<TtftEstimate> estimate;
};

class RoutePolicy {
 public:
  RoutePolicy(Policy policy, CostModel model) : policy_(policy), model_(std::move(model)) {}

  // The session ring's members: every replica's URL, ejected ones included
  // (a key whose home is ejected goes where the ring says, and comes back
  // when its home does). Call when the replica list changes.
  void set_members(std::vector<std::string> urls) { ring_ = ConsistentHashRing(std::move(urls)); }

  RouteChoice choose(const RouteRequest& request, std::span<const Candidate> candidates);
  Policy policy() const { return policy_; }

 private:
  RouteChoice cache_aware(const RouteRequest& request, std::span<const Candidate> candidates) const;

  Policy policy_;
  CostModel model_;
  ConsistentHashRing ring_{{}};
  size_t next_round_robin_ = 0;
};

}  // namespace strata::router
