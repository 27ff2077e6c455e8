#include "server/event_pump.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace strata::server {
namespace {

using namespace std::chrono_literals;

// Counts runs, and fails if two runs of the same task ever overlap.
class CountingTask : public EventPump::Task {
 public:
  void run() override {
    if (is_inside_.exchange(true)) has_overlapped_ = true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    num_runs_.fetch_add(1);
    is_inside_ = false;
  }
  std::atomic<int> num_runs_{0};
  std::atomic<bool> is_inside_{false};
  std::atomic<bool> has_overlapped_{false};
};

bool wait_for(const std::function<bool()>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(EventPump, ATaskScheduledWhileQueuedRunsOnce) {
  EventPump pump(1);
  auto task = std::make_shared<CountingTask>();
  // Each schedule of `task` lands while it is queued or running; at most one
  // extra run follows a run, so the count stays far below the schedules.
  for (int i = 0; i < 100; ++i) pump.schedule(task);
  ASSERT_TRUE(wait_for([&] { return task->num_runs_ >= 1; }));
  std::this_thread::sleep_for(20ms);
  EXPECT_LE(task->num_runs_.load(), 2);
}

TEST(EventPump, AScheduleDuringARunIsNeverLostAndRunsAreNeverConcurrent) {
  EventPump pump(4);
  auto task = std::make_shared<CountingTask>();
  std::vector<std::thread> producers;
  std::atomic<int> num_scheduled{0};
  for (int t = 0; t < 4; ++t) {
    producers.emplace_back([&] {
      for (int i = 0; i < 500; ++i) {
        pump.schedule(task);
        num_scheduled.fetch_add(1);
      }
    });
  }
  for (auto& p : producers) p.join();
  // After the last schedule the task runs at least once more: wait for the
  // runs to settle, then one more schedule must give one more run.
  std::this_thread::sleep_for(50ms);
  const int before = task->num_runs_.load();
  pump.schedule(task);
  ASSERT_TRUE(wait_for([&] { return task->num_runs_.load() > before; }));
  EXPECT_FALSE(task->has_overlapped_.load());
  EXPECT_GE(task->num_runs_.load(), 2);
}

TEST(EventPump, StopDropsQueuedTasksAndIgnoresLaterSchedules) {
  auto task = std::make_shared<CountingTask>();
  {
    EventPump pump(1);
    pump.stop();
    pump.schedule(task);
  }
  EXPECT_EQ(task->num_runs_.load(), 0);
  EXPECT_EQ(task.use_count(), 1);  // the pump kept no reference
}

}  // namespace
}  // namespace strata::server
