// EventPump: a few threads that run the consumers of engine output streams
// when they have something to do, so no thread waits per request.
//
// A Task is scheduled (by its RequestStream's listener, on the engine
// thread) whenever new events arrive; the pump runs it on one of its
// threads, where it drains its stream, formats the response pieces and
// hands them to its HttpResponse. A task scheduled while it is queued is
// queued once; one scheduled while it runs runs again right after, never
// on two threads at once. So a burst of events costs one wake-up, and a
// task sees every event.
//
// Thread-safe. stop() (or destruction) joins the threads; tasks still
// queued are dropped (the server aborts their requests first).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace strata::server {

class EventPump {
 public:
  class Task {
   public:
    virtual ~Task() = default;
    // Runs on a pump thread, never concurrently with itself.
    virtual void run() = 0;

   private:
    friend class EventPump;
    // Guarded by the pump's mutex.
    bool is_queued_ = false;
    bool is_running_ = false;
    bool is_scheduled_again_ = false;
  };

  explicit EventPump(int num_threads);
  ~EventPump();
  EventPump(const EventPump&) = delete;
  EventPump& operator=(const EventPump&) = delete;

  // Cheap and non-blocking (one lock, at most one notify).
  void schedule(std::shared_ptr<Task> task);
  void stop();

 private:
  void loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  bool is_stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace strata::server
