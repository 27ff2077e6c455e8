// FakeRunner: a stand-in for ModelRunner + Sampler in scheduler tests.
//
// It keeps one uint64 "K/V" per slot of the paged pool. For each scheduled
// token at position p it reads the value at p - 1 through the request's
// block table, mixes in the token and writes the result to p's slot; the
// sampled token is derived from the last value. So a request's output
// depends on its whole prefix *as stored in the cache*: a wrong block
// table, a bad prefix hit or a lost recompute changes the tokens, exactly
// as it would with a real model. reference_output() computes the same
// chain without any cache, as "the request alone".
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/step_plan.h"

namespace strata::testing {

inline uint64_t mix(uint64_t prev, int32_t token) {
  uint64_t x = prev ^ (static_cast<uint64_t>(static_cast<uint32_t>(token)) + 0x9e3779b97f4a7c15ull);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x;
}

// Sampled tokens live in [kFirstOutputToken, kFirstOutputToken + 1000);
// stop tokens in tests are chosen outside unless a test wants them.
constexpr int32_t kFirstOutputToken = 1000;
inline int32_t token_from(uint64_t value) {
  return kFirstOutputToken + static_cast<int32_t>(value % 1000);
}
constexpr uint64_t kSeed = 0x1234;

class FakeRunner {
 public:
  FakeRunner(int32_t num_blocks, int32_t block_size)
      : block_size_(block_size),
        values_(static_cast<size_t>(num_blocks) * block_size),
        tokens_(static_cast<size_t>(num_blocks) * block_size, -1) {}

  StepResult run(const StepPlan& plan) {
    StepResult result;
    for (const ScheduledRequest& r : plan.requests) {
      uint64_t v = 0;
      for (int32_t i = 0; i < r.num_new_tokens; ++i) {
        const int32_t p = r.position(i);
        const uint64_t prev = p == 0 ? kSeed : values_[slot(r.block_table, p - 1)];
        v = mix(prev, r.new_token_ids[i]);
        values_[slot(r.block_table, p)] = v;
        tokens_[slot(r.block_table, p)] = r.new_token_ids[i];
      }
      if (r.is_sampling) result.sampled.push_back({r.request_id, token_from(v)});
    }
    return result;
  }

  // The token whose K/V was last written to `slot`.
  int32_t token_in_slot(int64_t slot) const { return tokens_[slot]; }

 private:
  size_t slot(const std::vector<int32_t>& table, int32_t p) const {
    return static_cast<size_t>(table.at(p / block_size_)) * block_size_ + p % block_size_;
  }

  int32_t block_size_;
  std::vector<uint64_t> values_;
  std::vector<int32_t> tokens_;
};

// The first `num_outputs` tokens the request would produce alone.
inline std::vector<int32_t> reference_output(std::span<const int32_t> prompt, int64_t num_outputs) {
  std::vector<int32_t> out;
  uint64_t v = kSeed;
  for (int32_t t : prompt) v = mix(v, t);
  while (static_cast<int64_t>(out.size()) < num_outputs) {
    out.push_back(token_from(v));
    v = mix(v, out.back());
  }
  return out;
}

}  // namespace strata::testing
