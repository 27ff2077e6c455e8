#include "util/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace strata {
namespace {

TEST(ThreadPool, EveryIthCalledOncePerRun) {
  for (int threads = 1; threads <= 4; ++threads) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int run = 0; run < 500; ++run) {
      std::vector<std::atomic<int>> calls(threads);
      std::atomic<int> bad_nth{0};
      pool.run([&](int ith, int nth) {
        if (nth != threads) bad_nth.fetch_add(1);
        calls[ith].fetch_add(1);
      });
      for (int i = 0; i < threads; ++i) ASSERT_EQ(calls[i].load(), 1) << "run " << run;
      ASSERT_EQ(bad_nth.load(), 0);
    }
  }
}

TEST(ThreadPool, RunWaitsForAllWork) {
  ThreadPool pool(3);
  std::vector<int64_t> out(3001, 0);
  for (int run = 0; run < 200; ++run) {
    pool.run([&](int ith, int nth) {
      int64_t begin, end;
      split_range(static_cast<int64_t>(out.size()), ith, nth, &begin, &end);
      for (int64_t i = begin; i < end; ++i) out[i] += i;
    });
  }
  for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out[i], 200 * static_cast<int64_t>(i));
}

TEST(ThreadPool, SurvivesSleepBetweenRuns) {
  ThreadPool pool(2);
  std::atomic<int> total{0};
  for (int run = 0; run < 3; ++run) {
    pool.run([&](int, int) { total.fetch_add(1); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // workers go to sleep
  }
  EXPECT_EQ(total.load(), 6);
}

TEST(SplitRange, CoversExactlyOnce) {
  for (int64_t n : {0, 1, 5, 17, 100}) {
    for (int nth = 1; nth <= 5; ++nth) {
      int64_t covered = 0, prev_end = 0;
      for (int ith = 0; ith < nth; ++ith) {
        int64_t b, e;
        split_range(n, ith, nth, &b, &e);
        EXPECT_EQ(b, prev_end);
        EXPECT_LE(b, e);
        covered += e - b;
        prev_end = e;
      }
      EXPECT_EQ(covered, n);
    }
  }
}

}  // namespace
}  // namespace strata
