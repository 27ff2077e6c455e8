#include "router/route_policy.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace strata::router {

Result<Policy> parse_policy(std::string_view name) {
  if (name == "cache-aware") return Policy::kCacheAware;
  if (name == "least-load") return Policy::kLeastLoad;
  if (name == "round-robin") return Policy::kRoundRobin;
  if (name == "session") return Policy::kSession;
  return invalid_argument("router: unknown --policy '" + std::string(name) +
                          "' (cache-aware, least-load, round-robin or session)");
}

const char* policy_name(Policy policy) {
  switch (policy) {
    case Policy::kCacheAware:
      return "cache-aware";
    case Policy::kLeastLoad:
      return "least-load";
    case Policy::kRoundRobin:
      return "round-robin";
    case Policy::kSession:
      return "session";
  }
  return "?";
}

RouteChoice RoutePolicy::cache_aware(const RouteRequest& request,
                                     std::span<const Candidate> candidates) const {
  struct Scored {
    size_t index;
    TtftEstimate estimate;
  };
  // A replica's measured prefill rate is an average over its last few
  // steps, and one step slowed by the OS can cut it tenfold; clamped to
  // within 2x of the candidates' median, such noise cannot throw a
  // replica's cached prefix away, while a genuinely slower replica still
  // scores slower.
  std::vector<double> rates;
  for (const Candidate& c : candidates) {
    if (c.probe && c.probe->prefill_tokens_per_s > 0.0)
      rates.push_back(c.probe->prefill_tokens_per_s);
  }
  double median = 0.0;
  if (!rates.empty()) {
    std::nth_element(rates.begin(), rates.begin() + rates.size() / 2, rates.end());
    median = rates[rates.size() / 2];
  }
  std::vector<Scored> scored;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& c = candidates[i];
    // No probe: the load this router knows of, and nothing cached.
    PrefixProbe probe;
    if (c.probe) probe = *c.probe;
    if (median > 0.0) {
      // One that has not measured yet (or did not answer) is taken to be
      // like the others.
      probe.prefill_tokens_per_s =
          probe.prefill_tokens_per_s > 0.0
              ? std::clamp(probe.prefill_tokens_per_s, median / 2, median * 2)
              : median;
    }
    scored.push_back(
        {i, estimate_ttft(request.num_prompt_tokens, probe, c.routed_pending_tokens, model_)});
  }
  std::stable_sort(scored.begin(), scored.end(), [&](const Scored& a, const Scored& b) {
    if (a.estimate.seconds != b.estimate.seconds) return a.estimate.seconds < b.estimate.seconds;
    return candidates[a.index].num_in_flight < candidates[b.index].num_in_flight;
  });
  RouteChoice choice;
  for (const Scored& s : scored) choice.order.push_back(s.index);
  if (!scored.empty()) choice.estimate = scored.front().estimate;
  return choice;
}

RouteChoice RoutePolicy::choose(const RouteRequest& request,
                                std::span<const Candidate> candidates) {
  RouteChoice choice;
  if (candidates.empty()) return choice;
  switch (policy_) {
    case Policy::kCacheAware:
      return cache_aware(request, candidates);
    case Policy::kLeastLoad: {
      auto load = [](const Candidate& c) {
        return c.probe ? c.probe->num_waiting + c.probe->num_running : c.num_in_flight;
      };
      choice.order.resize(candidates.size());
      std::iota(choice.order.begin(), choice.order.end(), size_t{0});
      std::stable_sort(choice.order.begin(), choice.order.end(), [&](size_t a, size_t b) {
        const int64_t la = load(candidates[a]), lb = load(candidates[b]);
        if (la != lb) return la < lb;
        return candidates[a].num_in_flight < candidates[b].num_in_flight;
      });
      return choice;
    }
    case Policy::kRoundRobin: {
      const size_t first = next_round_robin_++ % candidates.size();
      for (size_t k = 0; k < candidates.size(); ++k) {
        choice.order.push_back((first + k) % candidates.size());
      }
      return choice;
    }
    case Policy::kSession: {
      if (request.session_key.empty()) return cache_aware(request, candidates);
      for (size_t member : ring_.preference(request.session_key)) {
        const std::string& url = ring_.members()[member];
        for (size_t i = 0; i < candidates.size(); ++i) {
          if (candidates[i].url == url) choice.order.push_back(i);
        }
      }
      // Candidates the ring does not know (not in set_members) go last.
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (std::find(choice.order.begin(), choice.order.end(), i) == choice.order.end()) {
          choice.order.push_back(i);
        }
      }
      return choice;
    }
  }
  return choice;
}

}  // namespace strata::router
