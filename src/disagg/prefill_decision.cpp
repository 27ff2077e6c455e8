#include "disagg/prefill_decision.h"

#include <algorithm>

namespace strata::disagg {

std::optional<RemotePrefillPolicy> parse_remote_prefill_policy(std::string_view name) {
  if (name == "auto") return RemotePrefillPolicy::kAuto;
  if (name == "always") return RemotePrefillPolicy::kAlways;
  if (name == "never") return RemotePrefillPolicy::kNever;
  return std::nullopt;
}

namespace {

double transfer_s(const PrefillRates& r, size_t kv_bytes) {
  const double bw = r.transfer_bytes_per_s > 0.0 ? r.transfer_bytes_per_s : kAssumedBytesPerS;
  return static_cast<double>(kv_bytes) / bw + r.rtt_s;
}

}  // namespace

bool prefer_remote(RemotePrefillPolicy policy, const PrefillRates& r, int64_t uncached_tokens,
                   size_t kv_bytes) {
  if (uncached_tokens <= 0) return false;
  switch (policy) {
    case RemotePrefillPolicy::kAlways:
      return true;
    case RemotePrefillPolicy::kNever:
      return false;
    case RemotePrefillPolicy::kAuto:
      break;
  }
  if (r.local_s_per_token <= 0.0) return false;
  const double local = static_cast<double>(uncached_tokens) * r.local_s_per_token;
  return local > r.peer_queue_delay_s + transfer_s(r, kv_bytes);
}

double expected_remote_s(const PrefillRates& r, int64_t uncached_tokens, size_t kv_bytes) {
  const double per_token = r.peer_s_per_token > 0.0    ? r.peer_s_per_token
                           : r.local_s_per_token > 0.0 ? r.local_s_per_token
                                                       : kAssumedSPerToken;
  return r.peer_queue_delay_s +
         static_cast<double>(std::max<int64_t>(uncached_tokens, 0)) * per_token +
         transfer_s(r, kv_bytes);
}

double transfer_deadline_s(const PrefillRates& r, int64_t uncached_tokens, size_t kv_bytes,
                           double min_deadline_s) {
  return std::max(min_deadline_s,
                  kDeadlineFactor * expected_remote_s(r, uncached_tokens, kv_bytes));
}

}  // namespace strata::disagg
