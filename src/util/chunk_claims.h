// ChunkClaims: the items [0, n) handed out to the threads of a pool run in
// contiguous chunks, each to whichever thread asks first.
//
// A static split gives every thread the same share and the run lasts as long
// as the slowest thread's: on a shared or virtual machine one vCPU is often
// a few percent slower than the other, and the faster one then waits. Here a
// thread that finishes early takes more. The chunks shrink as the range runs
// out (guided self-scheduling: each is what is left over 2 nth, at least
// one item), so the first chunks are long, sequential streams and the last
// ones leave little to wait for. Each item is claimed exactly once; which
// thread computes it, and in which chunk, must not change its result.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace strata {

class ChunkClaims {
 public:
  ChunkClaims(int64_t n, int nth) : n_(n), divisor_(2 * static_cast<int64_t>(std::max(1, nth))) {}
  ChunkClaims(const ChunkClaims&) = delete;
  ChunkClaims& operator=(const ChunkClaims&) = delete;

  // The next chunk [*begin, *end); false once every item is claimed.
  bool claim(int64_t* begin, int64_t* end) {
    int64_t cur = next_.load(std::memory_order_relaxed);
    for (;;) {
      if (cur >= n_) return false;
      const int64_t size = std::max<int64_t>(1, (n_ - cur) / divisor_);
      const int64_t stop = std::min(n_, cur + size);
      // Relaxed: the items are disjoint, and the pool's run() orders the
      // threads' work against the caller.
      if (next_.compare_exchange_weak(cur, stop, std::memory_order_relaxed)) {
        *begin = cur;
        *end = stop;
        return true;
      }
    }
  }

 private:
  const int64_t n_;
  const int64_t divisor_;
  std::atomic<int64_t> next_{0};
};

}  // namespace strata
