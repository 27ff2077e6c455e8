#include "util/chunk_claims.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "util/thread_pool.h"

namespace strata {
namespace {

// One thread takes every chunk: they tile [0, n) in order, each is what is
// left over 2 nth (at least one item), so they never grow.
TEST(ChunkClaims, OneThreadGetsGuidedChunksInOrder) {
  for (int64_t n : {0, 1, 7, 16, 100, 353}) {
    for (int nth : {1, 2, 3}) {
      ChunkClaims claims(n, nth);
      int64_t next = 0, prev_size = n + 1;
      int64_t b, e;
      while (claims.claim(&b, &e)) {
        ASSERT_EQ(b, next) << "n=" << n << " nth=" << nth;
        const int64_t want = std::min(n - b, std::max<int64_t>(1, (n - b) / (2 * nth)));
        ASSERT_EQ(e - b, want) << "n=" << n << " nth=" << nth << " b=" << b;
        ASSERT_LE(e - b, prev_size);
        prev_size = e - b;
        next = e;
      }
      EXPECT_EQ(next, n);
      EXPECT_FALSE(claims.claim(&b, &e));  // stays exhausted
    }
  }
}

// Threads claiming at once still get every item exactly once.
TEST(ChunkClaims, ConcurrentClaimsCoverEachItemOnce) {
  for (int threads : {2, 3, 4}) {
    ThreadPool pool(threads);
    for (int run = 0; run < 50; ++run) {
      const int64_t n = 1000 + run;
      std::vector<std::atomic<int>> hits(n);
      ChunkClaims claims(n, threads);
      pool.run([&](int, int) {
        int64_t b, e;
        while (claims.claim(&b, &e)) {
          for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1, std::memory_order_relaxed);
        }
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i;
    }
  }
}

}  // namespace
}  // namespace strata
