// prefill_decision: where a decode worker prefills a prompt, and how long it
// waits for a prefill worker, both from measured rates (no fixed
// thresholds, no fixed timeouts).
//
// Remote when computing the uncached tokens here would take longer than
// the prefill pool's queueing delay plus moving their KV:
//   uncached_tokens * local_s_per_token  >  queue_delay + bytes / bandwidth + rtt
// (the remote compute itself overlaps the transfer, chunk by chunk, and
// costs the decode worker's running streams nothing). Until the decode
// worker has measured its own prefill rate, it prefills locally: that is
// how it measures it.
//
// The deadline: a multiple of the expected remote time (queueing + remote
// compute + transfer), never below a floor; past it the decode worker
// computes whatever has not arrived. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::disagg {

// --remote-prefill: auto (the rule above), always (tests), never.
enum class RemotePrefillPolicy { kAuto, kAlways, kNever };
std::optional<RemotePrefillPolicy> parse_remote_prefill_policy(std::string_view name);

struct PrefillRates {
  double local_s_per_token = 0.0;     // this worker's measured prefill time; 0 = unknown
  double peer_queue_delay_s = 0.0;    // as the prefill worker last reported it
  double peer_s_per_token = 0.0;      // its prefill time per token; 0 = unknown
  double transfer_bytes_per_s = 0.0;  // measured on this channel; 0 = unknown
  double rtt_s = 0.0;                 // connect + first reply; 0 = unknown
};

// Assumed until measured: loopback TCP moves ~1 GB/s even on a busy core.
inline constexpr double kAssumedBytesPerS = 1e9;
// Assumed prefill time per token when neither side has measured one.
inline constexpr double kAssumedSPerToken = 1e-3;
inline constexpr double kDeadlineFactor = 3.0;

bool prefer_remote(RemotePrefillPolicy policy, const PrefillRates& rates, int64_t uncached_tokens,
                   size_t kv_bytes);
// Expected seconds of a remote prefill: queueing + compute + transfer + rtt.
double expected_remote_s(const PrefillRates& rates, int64_t uncached_tokens, size_t kv_bytes);
// max(min_deadline_s, kDeadlineFactor * expected_remote_s).
double transfer_deadline_s(const PrefillRates& rates, int64_t uncached_tokens, size_t kv_bytes,
                           double min_deadline_s);

}  // namespace strata::disagg
