#include "disagg/prefill_decision.h"

#include <gtest/gtest.h>

namespace strata::disagg {
namespace {

TEST(PrefillDecision, ParsesPolicies) {
  EXPECT_EQ(parse_remote_prefill_policy("auto"), RemotePrefillPolicy::kAuto);
  EXPECT_EQ(parse_remote_prefill_policy("always"), RemotePrefillPolicy::kAlways);
  EXPECT_EQ(parse_remote_prefill_policy("never"), RemotePrefillPolicy::kNever);
  EXPECT_FALSE(parse_remote_prefill_policy("sometimes"));
}

TEST(PrefillDecision, FixedPolicies) {
  PrefillRates r;
  EXPECT_TRUE(prefer_remote(RemotePrefillPolicy::kAlways, r, 32, 1000));
  EXPECT_FALSE(prefer_remote(RemotePrefillPolicy::kAlways, r, 0, 0));  // nothing to ask for
  r.local_s_per_token = 1.0;
  EXPECT_FALSE(prefer_remote(RemotePrefillPolicy::kNever, r, 4000, 1000));
}

TEST(PrefillDecision, AutoComparesLocalComputeWithQueuePlusTransfer) {
  PrefillRates r;
  // Not measured yet: prefill here (which measures it).
  EXPECT_FALSE(prefer_remote(RemotePrefillPolicy::kAuto, r, 4000, 90'000'000));
  r.local_s_per_token = 2e-3;  // 4000 tokens: 8 s here
  r.transfer_bytes_per_s = 1e9;
  r.rtt_s = 1e-4;
  // 90 MB at 1 GB/s + 1 s of queue: remote.
  r.peer_queue_delay_s = 1.0;
  EXPECT_TRUE(prefer_remote(RemotePrefillPolicy::kAuto, r, 4000, 90'000'000));
  // A long queue: here.
  r.peer_queue_delay_s = 9.0;
  EXPECT_FALSE(prefer_remote(RemotePrefillPolicy::kAuto, r, 4000, 90'000'000));
  // A short prompt on a slow link: here.
  r.peer_queue_delay_s = 0.0;
  r.transfer_bytes_per_s = 1e6;
  EXPECT_FALSE(prefer_remote(RemotePrefillPolicy::kAuto, r, 64, 1'500'000));
}

TEST(PrefillDecision, DeadlineFollowsMeasuredRates) {
  PrefillRates r;
  r.local_s_per_token = 1e-3;
  r.transfer_bytes_per_s = 1e9;
  // Nothing measured on the peer: its compute is assumed as fast as ours.
  EXPECT_NEAR(expected_remote_s(r, 1000, 1'000'000), 1.0 + 1e-3, 1e-9);
  EXPECT_NEAR(transfer_deadline_s(r, 1000, 1'000'000, 0.5), 3.0 * (1.0 + 1e-3), 1e-9);
  r.peer_s_per_token = 1e-4;
  r.peer_queue_delay_s = 2.0;
  EXPECT_NEAR(expected_remote_s(r, 1000, 1'000'000), 2.0 + 0.1 + 1e-3, 1e-9);
  // Never below the floor.
  EXPECT_DOUBLE_EQ(transfer_deadline_s(PrefillRates{}, 1, 1, 0.5), 0.5);
}

}  // namespace
}  // namespace strata::disagg
