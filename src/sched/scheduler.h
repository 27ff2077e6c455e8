// Scheduler: decides, step by step, which requests run and how many of
// their tokens are computed, under a token budget, a sequence cap and the
// KV blocks available. Pure: no threads, I/O or tensors; time comes from an
// injected Clock. Talks to the model only through StepPlan / StepResult.
//
// Each schedule():
//   1. running requests that decode (one token each), best first;
//   2. running requests in the middle of a prefill, best first, as much of
//      the remaining prompt as the budget allows (chunked prefill);
//   3. waiting requests, best first: prefix-cache lookup, then the uncached
//      tail as budget allows. Stops at the first request that cannot get
//      blocks (head of line: nobody overtakes it, so nobody starves).
// "Best" is the policy order (see SchedulingPolicy). When blocks run out
// for a running request, the worst running request (lowest priority, then
// latest arrival) is preempted by recompute: its blocks are freed (its full
// blocks stay in the prefix cache) and it returns to `waiting` at its
// original place in the order. Under kPriority a waiting request may also
// preempt a strictly lower-priority running one.
//
// Speculative decoding: schedule(max_drafts) gives decoding requests a
// drafter's guesses after their decode token; update() appends the drafts
// the executor accepted and the token drawn after them, and counts as
// computed only the K/V of accepted positions (a rejected draft's slot is
// rewritten by the next step; its block stays in the table for the tokens
// that follow, and is never cached before its slots hold real tokens).
//
// update() appends sampled tokens, applies the request's stop tokens (after
// min_tokens), max_tokens and max_model_len, caches newly full blocks and
// frees finished requests' blocks. Stop strings are the engine's: it calls
// finish_request(id, kStop). Each plan lists the requests finished since the
// previous one, so an executor can drop their state without asking.
//
// Pipeline micro-batches (schedule_micro_batch): up to P plans are in
// flight at once, each over requests none of the others holds. A request in
// a plan whose update() has not come yet is "in flight": later plans skip
// it, and it is never a preemption victim (its K/V is being written); each
// plan also takes at most max_requests requests, so continuous batching
// splits the live requests into P micro-batches of about equal size.
// schedule() never marks anything in flight: with one plan at a time nothing
// changes.
//
// Not thread-safe: owned by the engine thread, with the KvCacheManager and
// Clock it borrows (both must outlive it).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "kv/kv_cache_manager.h"
#include "sched/clock.h"
#include "sched/request.h"
#include "sched/scheduler_options.h"
#include "sched/step_plan.h"
#include "spec/draft_selector.h"
#include "spec/drafter.h"
#include "util/status.h"

namespace strata {

// Counters and gauges for the metrics exporter.
struct SchedulerStats {
  int32_t num_running = 0;
  int32_t num_waiting = 0;
  double kv_usage = 0.0;            // fraction of KV blocks referenced
  int64_t prefix_query_tokens = 0;  // total
  int64_t prefix_hit_tokens = 0;    // total
  int64_t num_preemptions = 0;      // total
  int64_t num_steps = 0;            // non-empty plans
  // Prompt tokens of live requests not computed yet (waiting and
  // prefilling), the work queued ahead of a new request.
  int64_t num_pending_prefill_tokens = 0;
  int32_t num_free_blocks = 0;
};

class Scheduler {
 public:
  // Preconditions: options.validate() is OK; `kv` and `clock` outlive this.
  Scheduler(const SchedulerOptions& options, KvCacheManager* kv, const Clock* clock);

  // Admits a request to `waiting`. Rejects (kInvalidArgument) a duplicate
  // id, an empty prompt, bad max/min_tokens, prompt + max_tokens beyond
  // max_model_len, and (kResourceExhausted) a request whose KV cannot fit
  // even in the empty pool, naming the knob to change.
  Status add_request(RequestSpec spec);

  // Ends a live request now, freeing its blocks at once (abort, or a stop
  // string the engine matched). No update is reported for it later.
  // Returns false if the id is unknown.
  bool finish_request(RequestId id, FinishReason reason);

  // `max_drafts` > 0 (speculative decoding, with a drafter set): each
  // decoding request may get up to that many draft tokens after its decode
  // token, as the drafter proposes them, within the token budget, max_tokens
  // and max_model_len, and only in KV blocks that are free without
  // preempting anyone. Not for requests with a grammar, logprobs, or fewer
  // than min_tokens outputs (their per-position masks are not kept).
  StepPlan schedule(int32_t max_drafts = 0);
  // schedule() for one micro-batch of a pipeline: skips requests in flight,
  // grants at most `max_requests` (>= 1) requests, and marks those it
  // grants in flight until update() consumes this plan.
  StepPlan schedule_micro_batch(int32_t max_drafts, int32_t max_requests);
  // Consumes the runner's result for `plan` (the last plan schedule()
  // returned; with micro-batches, the oldest plan in flight). Requests
  // finished or aborted since then are skipped.
  StepOutput update(const StepPlan& plan, const StepResult& result);

  // Speculative decoding's drafter (borrowed, outlives this; null: none).
  void set_drafter(Drafter* drafter) { drafter_ = drafter; }
  // Decides how many of each request's proposed drafts a step verifies
  // (borrowed; null: all of them).
  void set_draft_selector(DraftSelector* selector) { draft_selector_ = selector; }

  // A live (waiting or running) request, or nullptr.
  const Request* find(RequestId id) const;
  bool has_unfinished_requests() const { return !requests_.empty(); }
  int32_t num_running() const { return static_cast<int32_t>(running_.size()); }
  int32_t num_waiting() const { return static_cast<int32_t>(waiting_.size()); }
  // Queue contents in policy order (best first). For tests and debugging.
  std::vector<RequestId> running_ids() const;
  std::vector<RequestId> waiting_ids() const;
  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return options_; }

 private:
  // Policy order: smaller is better.
  struct OrderKey {
    int64_t rank = 0;  // 0 (fcfs), or the (aged) priority
    uint64_t arrival_seq = 0;
    auto operator<=>(const OrderKey&) const = default;
  };
  // A request granted tokens in the step being built.
  struct Grant {
    Request* request;
    int64_t num_new_tokens;
    std::vector<int32_t> drafts = {};  // speculative tokens after them
    int32_t draft_class = 0;           // their match class
  };
  struct StepState;

  OrderKey key_of(const Request& r) const;
  void insert_sorted(std::vector<Request*>* queue, Request* r) const;
  static void erase_from(std::vector<Request*>* queue, const Request* r);

  // Grants tokens to running request `r`, preempting as needed. Returns
  // false if `r` itself was preempted.
  bool schedule_running(Request* r, StepState& st);
  // The cost of prompt tokens [start, start + n) against the prefill budget
  // (see SchedulerOptions::prefill_cost_context_len).
  double prefill_cost(int64_t start, int64_t n) const;
  // The most of max_n prompt tokens from position `start` that fit the
  // step's prefill budget (at least one if none was granted yet), and the
  // charge for granting n of them.
  int64_t prefill_tokens_within(int64_t start, int64_t max_n, const StepState& st) const;
  void charge_prefill(int64_t start, int64_t n, StepState& st) const;
  // Tries to admit waiting_[index]; returns false when the waiting pass stops.
  bool admit_waiting(size_t index, StepState& st);
  bool can_preempt_for(const Request& waiting) const;
  // The worst running request that may be preempted (not in flight), or
  // null.
  Request* preemption_victim() const;
  StepPlan build_plan(int32_t max_drafts, int32_t max_requests, bool marks_in_flight);
  // Draft tokens for decoding request `r` (its decode token already
  // granted and allocated), their KV allocated, and their match class in
  // *cls; empty when none fit.
  std::vector<int32_t> propose_drafts(Request* r, StepState& st, int32_t* cls);
  // Trims the decodes' drafts to what the draft selector keeps; a request
  // that keeps none and has no shadow under way shadows its proposal.
  void select_drafts(StepState& st);
  // Checks `appended` (tokens the request just got) against its shadow.
  void advance_shadow(Request* r, std::span<const int32_t> appended);
  // Adds drafts' outcome to request `r`'s records and every request's.
  void record_drafts(Request* r, int32_t cls, int32_t num_drafts, int32_t num_accepted);
  void preempt(Request* victim, StepState& st);
  // update() for a request that verified drafts: appends the accepted ones
  // and the token drawn after them, counts their K/V as computed.
  void apply_verified(const ScheduledRequest& s, const SampledToken& st, Request* r,
                      RequestUpdate* u);
  void release(Request* r, FinishReason reason);

  SchedulerOptions options_;
  KvCacheManager* kv_;
  const Clock* clock_;
  Drafter* drafter_ = nullptr;
  DraftSelector* draft_selector_ = nullptr;
  std::vector<DraftCandidate> draft_candidates_;  // scratch
  ClassRecords every_request_drafts_;             // every request's drafts, by match class
  std::vector<int32_t> draft_scratch_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;  // live requests
  std::vector<Request*> running_;                                     // policy order
  std::vector<Request*> waiting_;                                     // policy order
  uint64_t next_arrival_seq_ = 0;
  uint64_t next_step_id_ = 0;
  int64_t num_preemptions_ = 0;
  int64_t num_steps_ = 0;
  // Requests that reached a plan and finished since the last schedule().
  std::vector<RequestId> finished_since_plan_;
};

}  // namespace strata
