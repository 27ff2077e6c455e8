#include "loadgen/benchmark_runner.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "loadgen/arrival_schedule.h"
#include "loadgen/progress_bar.h"

namespace strata::loadgen {
namespace {

constexpr int64_t kMaxWorkers = 4096;

// Indices released by the dispatcher, taken by the workers in order.
class ReleaseQueue {
 public:
  void push(int64_t i) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(i);
    }
    cv_.notify_one();
  }
  void close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      is_closed_ = true;
    }
    cv_.notify_all();
  }
  // -1 once closed and drained.
  int64_t pop() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return is_closed_ || !items_.empty(); });
    if (items_.empty()) return -1;
    const int64_t i = items_.front();
    items_.pop_front();
    return i;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int64_t> items_;
  bool is_closed_ = false;
};

// Runs num_items work units under the schedule with W workers; `work`
// (worker's client, item index, benchmark start) does one unit.
Status dispatch(const ClientOptions& client_opt, const RunOptions& opt, int64_t num_items,
                const std::function<void(OpenAiClient*, int64_t, BenchClock::time_point)>& work,
                double* duration_s) {
  int64_t num_workers = opt.max_concurrency > 0 ? opt.max_concurrency : num_items;
  num_workers = std::clamp<int64_t>(std::min(num_workers, num_items), 1, kMaxWorkers);
  std::vector<std::unique_ptr<OpenAiClient>> clients;
  for (int64_t w = 0; w < num_workers; ++w) {
    STRATA_ASSIGN_OR_RETURN(auto c, OpenAiClient::create(client_opt));
    clients.push_back(std::move(c));
  }
  const std::vector<double> arrivals =
      make_arrival_times_s(num_items, ArrivalOptions{opt.request_rate, opt.burstiness, opt.seed});
  ReleaseQueue queue;
  const BenchClock::time_point t0 = BenchClock::now();
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(num_workers));
  for (int64_t w = 0; w < num_workers; ++w) {
    workers.emplace_back([&, w] {
      for (int64_t i = queue.pop(); i >= 0; i = queue.pop()) work(clients[w].get(), i, t0);
    });
  }
  for (int64_t i = 0; i < num_items; ++i) {
    std::this_thread::sleep_until(t0 + std::chrono::duration_cast<BenchClock::duration>(
                                           std::chrono::duration<double>(arrivals[i])));
    queue.push(i);
  }
  queue.close();
  for (std::thread& t : workers) t.join();
  *duration_s = std::chrono::duration<double>(BenchClock::now() - t0).count();
  return Status::ok();
}

Status warm_up_failed(const RequestOutcome& o) {
  return io_error("warm-up request failed: " + o.error);
}

}  // namespace

Result<RunResult> run_benchmark(const ClientOptions& client_opt, const RunOptions& opt,
                                const std::vector<BenchRequest>& requests) {
  if (requests.empty()) return invalid_argument("loadgen: the dataset is empty");
  {
    STRATA_ASSIGN_OR_RETURN(auto client, OpenAiClient::create(client_opt));
    for (int32_t i = 0; i < opt.num_warmups; ++i) {
      RequestOutcome o = client->stream(opt.endpoint, make_completion_body(requests[0], opt.body),
                                        requests[0].num_prompt_tokens, false, BenchClock::now());
      if (!o.is_success) return warm_up_failed(o);
    }
  }
  RunResult result;
  result.outcomes.resize(requests.size());
  ProgressBar progress(static_cast<int64_t>(requests.size()), opt.show_progress);
  STRATA_RETURN_IF_ERROR(dispatch(
      client_opt, opt, static_cast<int64_t>(requests.size()),
      [&](OpenAiClient* client, int64_t i, BenchClock::time_point t0) {
        const BenchRequest& r = requests[static_cast<size_t>(i)];
        RequestOutcome o = client->stream(opt.endpoint, make_completion_body(r, opt.body),
                                          r.num_prompt_tokens, opt.keep_text, t0);
        progress.advance(!o.is_success);
        result.outcomes[static_cast<size_t>(i)] = std::move(o);
      },
      &result.duration_s));
  progress.finish();
  result.metrics = aggregate_metrics(result.outcomes, result.duration_s, opt.slo, opt.percentiles);
  return result;
}

Result<RunResult> run_multi_turn_benchmark(const ClientOptions& client_opt, const RunOptions& opt,
                                           const std::vector<ChatSession>& sessions) {
  if (sessions.empty() || sessions[0].user_messages.empty()) {
    return invalid_argument("loadgen: no chat sessions");
  }
  {
    STRATA_ASSIGN_OR_RETURN(auto client, OpenAiClient::create(client_opt));
    const std::vector<ChatTurn> first = {{"user", sessions[0].user_messages[0]}};
    for (int32_t i = 0; i < opt.num_warmups; ++i) {
      RequestOutcome o =
          client->stream(opt.endpoint, make_chat_body(first, sessions[0].output_len, opt.body), -1,
                         false, BenchClock::now());
      if (!o.is_success) return warm_up_failed(o);
    }
  }
  std::vector<size_t> first_index(sessions.size() + 1, 0);
  for (size_t s = 0; s < sessions.size(); ++s) {
    first_index[s + 1] = first_index[s] + sessions[s].user_messages.size();
  }
  RunResult result;
  result.outcomes.resize(first_index.back());
  ProgressBar progress(static_cast<int64_t>(result.outcomes.size()), opt.show_progress);
  STRATA_RETURN_IF_ERROR(dispatch(
      client_opt, opt, static_cast<int64_t>(sessions.size()),
      [&](OpenAiClient* client, int64_t s, BenchClock::time_point t0) {
        const ChatSession& session = sessions[static_cast<size_t>(s)];
        std::vector<ChatTurn> history;
        bool is_broken = false;
        for (size_t t = 0; t < session.user_messages.size(); ++t) {
          RequestOutcome& slot = result.outcomes[first_index[static_cast<size_t>(s)] + t];
          if (is_broken) {
            slot.error = "not sent: an earlier turn of its session failed";
            progress.advance(true);
            continue;
          }
          history.push_back({"user", session.user_messages[t]});
          slot = client->stream(opt.endpoint, make_chat_body(history, session.output_len, opt.body),
                                -1, /*keep_text=*/true, t0);
          progress.advance(!slot.is_success);
          if (!slot.is_success) {
            is_broken = true;
            continue;
          }
          history.push_back({"assistant", slot.generated_text});
          if (!opt.keep_text) slot.generated_text.clear();
        }
      },
      &result.duration_s));
  progress.finish();
  result.metrics = aggregate_metrics(result.outcomes, result.duration_s, opt.slo, opt.percentiles);
  return result;
}

}  // namespace strata::loadgen
