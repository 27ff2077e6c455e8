#include "sched/scheduler.h"

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <span>
#include <string>
#include <utility>

namespace strata {

struct Scheduler::StepState {
  int64_t budget_tokens = 0;
  int32_t max_drafts = 0;  // per decoding request
  // Prompt-token cost this step may still spend (max_prefill_tokens while
  // decodes run, else unlimited: budget_tokens bounds it), counted as
  // prefill_cost() does. Every granted prompt token costs >= 1, so a limited
  // budget below max_prefill_tokens means some were granted.
  double prefill_budget = kUnlimited;
  static constexpr double kUnlimited = 1e300;
  std::vector<Grant> grants;
  size_t max_grants = SIZE_MAX;           // micro-batches: requests per plan
  std::vector<const Request*> preempted;  // this step; not re-admitted in it
  StepPlan* plan = nullptr;

  bool was_preempted(const Request* r) const {
    return std::find(preempted.begin(), preempted.end(), r) != preempted.end();
  }
  bool is_full() const { return grants.size() >= max_grants; }
};

Scheduler::Scheduler(const SchedulerOptions& options, KvCacheManager* kv, const Clock* clock)
    : options_(options), kv_(kv), clock_(clock) {
  assert(options.validate().is_ok());
}

Scheduler::OrderKey Scheduler::key_of(const Request& r) const {
  OrderKey key;
  key.arrival_seq = r.arrival_seq;
  if (options_.policy == SchedulingPolicy::kPriority) {
    const int64_t priority = std::clamp<int64_t>(r.spec.priority, -1'000'000, 1'000'000);
    key.rank = options_.priority_aging_ns > 0 ? priority * options_.priority_aging_ns + r.arrival_ns
                                              : priority;
  }
  return key;
}

void Scheduler::insert_sorted(std::vector<Request*>* queue, Request* r) const {
  const OrderKey key = key_of(*r);
  auto pos =
      std::upper_bound(queue->begin(), queue->end(), key,
                       [this](const OrderKey& k, const Request* q) { return k < key_of(*q); });
  queue->insert(pos, r);
}

void Scheduler::erase_from(std::vector<Request*>* queue, const Request* r) {
  auto it = std::find(queue->begin(), queue->end(), r);
  if (it != queue->end()) queue->erase(it);
}

Status Scheduler::add_request(RequestSpec spec) {
  const std::string name = "request " + std::to_string(spec.id);
  if (requests_.count(spec.id)) return invalid_argument(name + ": duplicate request id");
  if (spec.prompt_tokens.empty()) return invalid_argument(name + ": the prompt is empty");
  if (spec.max_tokens < 1) return invalid_argument(name + ": max_tokens must be >= 1");
  if (spec.min_tokens < 0 || spec.min_tokens > spec.max_tokens) {
    return invalid_argument(name + ": min_tokens must be in [0, max_tokens]");
  }
  const int64_t num_prompt = static_cast<int64_t>(spec.prompt_tokens.size());
  const int64_t max_total = num_prompt + spec.max_tokens;
  if (max_total > options_.max_model_len) {
    return invalid_argument(name + ": prompt (" + std::to_string(num_prompt) +
                            " tokens) + max_tokens (" + std::to_string(spec.max_tokens) +
                            ") exceeds --max-model-len " + std::to_string(options_.max_model_len) +
                            "; shorten the prompt or lower max_tokens");
  }
  // The last sampled token never needs K/V.
  const int64_t needed_blocks = kv_->blocks_for_tokens(max_total - 1);
  if (needed_blocks > kv_->num_blocks()) {
    return invalid_argument(name + ": needs " + std::to_string(needed_blocks) + " KV blocks (" +
                            std::to_string(max_total - 1) + " tokens) but the whole pool has " +
                            std::to_string(kv_->num_blocks()) +
                            "; raise --kv-cache-memory or lower max_tokens");
  }
  auto request = std::make_unique<Request>();
  Request* r = request.get();
  r->tokens = std::move(spec.prompt_tokens);
  r->tokens.reserve(max_total);
  r->num_prompt_tokens = num_prompt;
  spec.prompt_tokens.clear();
  r->spec = std::move(spec);
  if (kv_->is_prefix_caching_enabled()) {
    extend_block_hashes(r->tokens, kv_->block_size(), r->spec.cache_salt, &r->block_hashes);
  }
  r->arrival_seq = next_arrival_seq_++;
  r->arrival_ns = clock_->now_ns();
  requests_.emplace(r->spec.id, std::move(request));
  insert_sorted(&waiting_, r);
  return Status::ok();
}

void Scheduler::release(Request* r, FinishReason reason) {
  if (drafter_ != nullptr) drafter_->finish(r->spec.id, r->tokens, r->num_prompt_tokens);
  kv_->remove(r->spec.id);
  r->status = RequestStatus::kFinished;
  r->finish_reason = reason;
  if (r->first_scheduled_ns >= 0) finished_since_plan_.push_back(r->spec.id);
}

bool Scheduler::finish_request(RequestId id, FinishReason reason) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return false;
  Request* r = it->second.get();
  erase_from(r->status == RequestStatus::kRunning ? &running_ : &waiting_, r);
  release(r, reason);
  requests_.erase(it);
  return true;
}

void Scheduler::preempt(Request* victim, StepState& st) {
  kv_->free(victim->spec.id);
  erase_from(&running_, victim);
  auto g = std::find_if(st.grants.begin(), st.grants.end(),
                        [victim](const Grant& x) { return x.request == victim; });
  if (g != st.grants.end()) {
    st.budget_tokens += g->num_new_tokens + static_cast<int64_t>(g->drafts.size());
    st.grants.erase(g);
  }
  victim->status = RequestStatus::kWaiting;
  victim->num_computed_tokens = 0;
  ++victim->num_preemptions;
  ++num_preemptions_;
  insert_sorted(&waiting_, victim);
  st.preempted.push_back(victim);
  st.plan->preempted_ids.push_back(victim->spec.id);
}

double Scheduler::prefill_cost(int64_t start, int64_t n) const {
  const double count = static_cast<double>(n);
  if (options_.prefill_cost_context_len <= 0) return count;
  // sum over p in [start, start + n) of 1 + p / len
  const double positions = count * static_cast<double>(start) + count * (count - 1) / 2;
  return count + positions / static_cast<double>(options_.prefill_cost_context_len);
}

int64_t Scheduler::prefill_tokens_within(int64_t start, int64_t max_n, const StepState& st) const {
  if (max_n <= 0 || st.prefill_budget >= StepState::kUnlimited) return max_n;
  if (prefill_cost(start, max_n) <= st.prefill_budget) return max_n;
  // The cost grows with n: the largest n in [0, max_n) within the budget.
  int64_t lo = 0, hi = max_n;  // cost(lo) fits, cost(hi) does not
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (prefill_cost(start, mid) <= st.prefill_budget ? lo : hi) = mid;
  }
  // A first prompt token always goes, however long its context.
  const bool none_granted = st.prefill_budget >= static_cast<double>(options_.max_prefill_tokens);
  return lo == 0 && none_granted ? 1 : lo;
}

void Scheduler::charge_prefill(int64_t start, int64_t n, StepState& st) const {
  if (n <= 0) return;
  if (st.prefill_budget < StepState::kUnlimited) {
    st.prefill_budget = std::max(0.0, st.prefill_budget - prefill_cost(start, n));
  }
}

bool Scheduler::schedule_running(Request* r, StepState& st) {
  const bool is_prefill = r->is_prefilling();
  int64_t n = std::min(r->num_tokens() - r->num_computed_tokens, st.budget_tokens);
  if (is_prefill) n = prefill_tokens_within(r->num_computed_tokens, n, st);
  if (n <= 0) return true;
  const PrefixHit no_hit;
  while (!kv_->allocate(r->spec.id, no_hit, r->num_computed_tokens + n)) {
    // The worst running request not in flight (r itself is not).
    Request* victim = preemption_victim();
    preempt(victim, st);
    if (victim == r) return false;
  }
  st.budget_tokens -= n;
  std::vector<int32_t> drafts;
  int32_t draft_class = 0;
  if (!is_prefill && st.max_drafts > 0 && r->num_computed_tokens + n == r->num_tokens()) {
    drafts = propose_drafts(r, st, &draft_class);
    st.budget_tokens -= static_cast<int64_t>(drafts.size());
  }
  st.grants.push_back({r, n, std::move(drafts), draft_class});
  if (is_prefill) charge_prefill(r->num_computed_tokens, n, st);
  return true;
}

std::vector<int32_t> Scheduler::propose_drafts(Request* r, StepState& st, int32_t* cls) {
  std::vector<int32_t> drafts;
  const RequestSpec& spec = r->spec;
  if (drafter_ == nullptr || spec.grammar != nullptr || spec.sampling.num_logprobs > 0 ||
      r->num_output_tokens() < spec.min_tokens) {
    return drafts;
  }
  // After this step the request holds up to num_tokens + drafts + 1 tokens,
  // within max_tokens and max_model_len.
  const int64_t k = std::min<int64_t>({st.max_drafts, st.budget_tokens,
                                       spec.max_tokens - r->num_output_tokens() - 1,
                                       options_.max_model_len - r->num_tokens() - 1});
  if (k <= 0) return drafts;
  draft_scratch_.clear();
  const int64_t t0 = clock_->now_ns();
  *cls = match_class(drafter_->propose(spec.id, r->tokens, r->num_prompt_tokens,
                                       static_cast<int32_t>(k), &draft_scratch_));
  st.plan->draft_proposal_seconds += static_cast<double>(clock_->now_ns() - t0) * 1e-9;
  if (draft_scratch_.empty()) return drafts;
  drafts.assign(draft_scratch_.begin(),
                draft_scratch_.begin() + std::min<int64_t>(k, std::ssize(draft_scratch_)));
  // Drafts are a bet: they take free blocks, never another request's.
  const PrefixHit no_hit;
  const int64_t want = r->num_tokens() + std::ssize(drafts);
  if (!kv_->allocate(spec.id, no_hit, want)) {
    const int64_t covered =
        static_cast<int64_t>(kv_->block_table(spec.id).size()) * kv_->block_size();
    drafts.resize(
        static_cast<size_t>(std::clamp<int64_t>(covered - r->num_tokens(), 0, std::ssize(drafts))));
  }
  return drafts;
}

void Scheduler::select_drafts(StepState& st) {
  if (draft_selector_ == nullptr) return;
  draft_candidates_.clear();
  for (const Grant& g : st.grants) {
    if (g.drafts.empty()) continue;
    DraftCandidate c;
    c.request_id = g.request->spec.id;
    c.num_proposed = static_cast<int32_t>(g.drafts.size());
    c.match_class = g.draft_class;
    c.record = g.request->draft_records.of[static_cast<size_t>(g.draft_class)];
    draft_candidates_.push_back(c);
  }
  if (draft_candidates_.empty()) return;
  // Every grant so far is a decode (prompts come after).
  draft_selector_->select(static_cast<int32_t>(st.grants.size()), every_request_drafts_,
                          draft_candidates_);
  size_t next = 0;
  for (Grant& g : st.grants) {
    if (g.drafts.empty()) continue;
    const DraftCandidate& c = draft_candidates_[next++];
    const auto keep = static_cast<size_t>(std::clamp(c.num_selected, 0, c.num_proposed));
    Request& r = *g.request;
    if (keep > 0) {
      // Verified drafts are what the records learn from now; a shadow
      // under way counts what it has matched so far (no rejection seen).
      if (!r.shadow_drafts.empty()) {
        record_drafts(&r, r.shadow_class, r.shadow_matched, r.shadow_matched);
      }
      r.shadow_drafts.clear();
    } else if (r.shadow_drafts.empty()) {
      r.shadow_drafts = g.drafts;
      r.shadow_class = g.draft_class;
      r.shadow_matched = 0;
    }
    st.budget_tokens += static_cast<int64_t>(g.drafts.size() - keep);
    g.drafts.resize(keep);
  }
}

void Scheduler::advance_shadow(Request* r, std::span<const int32_t> appended) {
  for (int32_t token : appended) {
    if (r->shadow_drafts.empty()) return;
    const auto size = static_cast<int32_t>(r->shadow_drafts.size());
    if (r->shadow_drafts[static_cast<size_t>(r->shadow_matched)] == token) {
      if (++r->shadow_matched < size) continue;
    }
    record_drafts(r, r->shadow_class, size, r->shadow_matched);
    r->shadow_drafts.clear();
  }
}

void Scheduler::record_drafts(Request* r, int32_t cls, int32_t num_drafts, int32_t num_accepted) {
  r->draft_records.of[static_cast<size_t>(cls)].add(num_drafts, num_accepted);
  every_request_drafts_.of[static_cast<size_t>(cls)].add(num_drafts, num_accepted);
}

Request* Scheduler::preemption_victim() const {
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    if (!(*it)->is_in_flight) return *it;
  }
  return nullptr;
}

bool Scheduler::can_preempt_for(const Request& waiting) const {
  if (options_.policy != SchedulingPolicy::kPriority) return false;
  const Request* victim = preemption_victim();
  return victim != nullptr && key_of(*victim).rank > key_of(waiting).rank;
}

bool Scheduler::admit_waiting(size_t index, StepState& st) {
  Request* r = waiting_[index];
  if (st.was_preempted(r)) return false;  // it keeps its place; next step
  const bool is_full = static_cast<int32_t>(running_.size()) >= options_.effective_max_num_seqs();
  if (is_full && st.prefill_budget < StepState::kUnlimited && can_preempt_for(*r)) {
    // Preempt for it only if what is left of the prefill budget admits it.
    const PrefixHit probe = kv_->find_prefix(r->tokens, r->block_hashes);
    if (prefill_tokens_within(probe.num_tokens, 1, st) == 0) return false;
  }
  while (static_cast<int32_t>(running_.size()) >= options_.effective_max_num_seqs()) {
    if (!can_preempt_for(*r)) return false;
    preempt(preemption_victim(), st);
  }
  const RequestId id = r->spec.id;
  const PrefixHit hit = kv_->find_prefix(r->tokens, r->block_hashes);
  const int64_t n = prefill_tokens_within(
      hit.num_tokens, std::min(r->num_tokens() - hit.num_tokens, st.budget_tokens), st);
  if (n <= 0) return false;
  while (!kv_->allocate(id, hit, hit.num_tokens + n)) {
    if (!can_preempt_for(*r)) return false;
    preempt(preemption_victim(), st);
  }
  kv_->record_prefix_query(r->num_tokens(), hit.num_tokens);
  r->num_computed_tokens = hit.num_tokens;
  r->status = RequestStatus::kRunning;
  waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(index));
  insert_sorted(&running_, r);
  st.grants.push_back({r, n});
  st.budget_tokens -= n;
  charge_prefill(hit.num_tokens, n, st);
  return true;
}

StepPlan Scheduler::schedule(int32_t max_drafts) {
  return build_plan(max_drafts, 0, false);
}

StepPlan Scheduler::schedule_micro_batch(int32_t max_drafts, int32_t max_requests) {
  return build_plan(max_drafts, std::max(1, max_requests), true);
}

StepPlan Scheduler::build_plan(int32_t max_drafts, int32_t max_requests, bool marks_in_flight) {
  StepPlan plan;
  plan.step_id = next_step_id_++;
  plan.block_size = kv_->block_size();
  plan.finished_ids.swap(finished_since_plan_);
  StepState st;
  st.budget_tokens = options_.max_num_batched_tokens;
  st.max_drafts = drafter_ != nullptr ? std::max(0, max_drafts) : 0;
  st.plan = &plan;
  if (max_requests > 0) st.max_grants = static_cast<size_t>(max_requests);
  st.grants.reserve(running_.size() + 8);

  // Decodes, then running prefill chunks. A preemption removes the back of
  // running_, which is never before index i.
  for (int pass = 0; pass < 2; ++pass) {
    const bool want_prefill = pass == 1;
    // The decodes are granted: keep the drafts that pay before prompts
    // take what is left of the budget.
    if (want_prefill) select_drafts(st);
    if (want_prefill && options_.max_prefill_tokens > 0 && !st.grants.empty()) {
      st.prefill_budget = static_cast<double>(options_.max_prefill_tokens);  // decodes run
    }
    for (size_t i = 0; i < running_.size() && st.budget_tokens > 0 && !st.is_full() &&
                       (!want_prefill || st.prefill_budget > 0);) {
      Request* r = running_[i];
      if (r->is_prefilling() != want_prefill || r->is_in_flight) {
        ++i;
        continue;
      }
      if (!schedule_running(r, st)) break;  // r was the worst: everything after it is gone
      ++i;
    }
  }
  // Admissions, best first, head of line. A sibling whose prefix source is
  // still computing the shared prompt waits for it without blocking others.
  for (size_t w = 0;
       w < waiting_.size() && st.budget_tokens > 0 && st.prefill_budget > 0 && !st.is_full();) {
    const Request* r = waiting_[w];
    if (r->spec.prefix_source_id != 0) {
      const Request* source = find(r->spec.prefix_source_id);
      if (source && source->is_prefilling()) {
        ++w;
        continue;
      }
    }
    if (!admit_waiting(w, st)) break;
  }

  plan.requests.reserve(st.grants.size());
  const int64_t now_ns = st.grants.empty() ? 0 : clock_->now_ns();
  for (const Grant& g : st.grants) {
    Request& r = *g.request;
    r.is_in_flight = marks_in_flight;
    // First time in a plan (a grant undone by a preemption in the same step
    // does not count).
    const bool is_first_step = r.first_scheduled_ns < 0;
    if (is_first_step) {
      r.first_scheduled_ns = now_ns;
      r.num_cached_prompt_tokens = r.num_computed_tokens;
    }
    ScheduledRequest s;
    s.request_id = r.spec.id;
    s.num_computed_tokens = r.num_computed_tokens;
    s.num_new_tokens = static_cast<int32_t>(g.num_new_tokens + std::ssize(g.drafts));
    s.new_token_ids.assign(r.tokens.begin() + r.num_computed_tokens,
                           r.tokens.begin() + r.num_computed_tokens + g.num_new_tokens);
    s.new_token_ids.insert(s.new_token_ids.end(), g.drafts.begin(), g.drafts.end());
    s.num_draft_tokens = static_cast<int32_t>(g.drafts.size());
    r.verifying_class = g.draft_class;
    s.block_table = kv_->block_table(r.spec.id);
    s.is_sampling = r.num_computed_tokens + g.num_new_tokens == r.num_tokens();
    s.is_prefill = r.num_computed_tokens < r.num_prompt_tokens;
    s.masks_stop_tokens = s.is_sampling && r.num_output_tokens() < r.spec.min_tokens;
    if (is_first_step) {
      NewRequestData d;
      d.sampling = r.spec.sampling;
      d.prompt_tokens.assign(r.tokens.begin(), r.tokens.begin() + r.num_prompt_tokens);
      d.stop_token_ids = r.spec.stop_token_ids;
      d.grammar = r.spec.grammar;
      s.new_request = std::move(d);
    }
    plan.num_scheduled_tokens += s.num_new_tokens;
    plan.requests.push_back(std::move(s));
  }
  if (!plan.empty()) ++num_steps_;
  return plan;
}

StepOutput Scheduler::update(const StepPlan& plan, const StepResult& result) {
  StepOutput out;
  every_request_drafts_.decay(ClassRecords::kEveryRequestDecay);
  std::unordered_map<RequestId, const SampledToken*> sampled;
  sampled.reserve(result.sampled.size());
  for (const SampledToken& s : result.sampled) sampled.emplace(s.request_id, &s);
  bool any_finished = false;

  for (const ScheduledRequest& s : plan.requests) {
    auto it = requests_.find(s.request_id);
    if (it == requests_.end()) continue;
    Request* r = it->second.get();
    r->is_in_flight = false;  // its step came back
    // Skip a request preempted (or re-admitted) since the plan was made.
    if (r->status != RequestStatus::kRunning || r->num_computed_tokens != s.num_computed_tokens) {
      continue;
    }
    RequestUpdate u;
    u.request_id = s.request_id;
    const bool failed = std::find(result.failed_ids.begin(), result.failed_ids.end(),
                                  s.request_id) != result.failed_ids.end();
    auto tok = sampled.find(s.request_id);
    if (failed || (s.is_sampling && tok == sampled.end())) {
      u.finish_reason = FinishReason::kError;
    } else if (s.num_draft_tokens > 0) {
      apply_verified(s, *tok->second, r, &u);
      r->draft_records.decay();
      record_drafts(r, r->verifying_class, u.num_draft_tokens, u.num_accepted_drafts);
    } else {
      const int64_t num_before = r->num_tokens();
      r->num_computed_tokens += s.num_new_tokens;
      kv_->commit_computed(r->spec.id, r->tokens, r->block_hashes, r->num_computed_tokens);
      if (s.is_sampling) {
        const SampledToken& st = *tok->second;
        // The sampled token, then any forced ones, each checked for the end.
        for (size_t k = 0; k <= st.forced_tokens.size() && u.finish_reason == FinishReason::kNone;
             ++k) {
          const int32_t token = k == 0 ? st.token : st.forced_tokens[k - 1];
          r->tokens.push_back(token);
          if (k == 0) {
            u.has_new_token = true;
            u.new_token = token;
          } else {
            u.forced_tokens.push_back(token);
          }
          const auto& stops = r->spec.stop_token_ids;
          if (r->num_output_tokens() > r->spec.min_tokens &&
              std::find(stops.begin(), stops.end(), token) != stops.end()) {
            u.finish_reason = FinishReason::kStop;
            u.ends_on_stop_token = true;
          } else if (r->num_output_tokens() >= r->spec.max_tokens ||
                     r->num_tokens() >= options_.max_model_len) {
            u.finish_reason = FinishReason::kLength;
          }
        }
        if (kv_->is_prefix_caching_enabled()) {
          extend_block_hashes(r->tokens, kv_->block_size(), r->spec.cache_salt, &r->block_hashes);
        }
        if (u.finish_reason == FinishReason::kNone && st.ends_request) {
          u.finish_reason = FinishReason::kStop;
        }
        if (!s.is_prefill) {
          r->draft_records.decay();
          advance_shadow(
              r, std::span<const int32_t>(r->tokens).subspan(static_cast<size_t>(num_before)));
        }
      }
    }
    u.num_prompt_tokens = r->num_prompt_tokens;
    u.num_output_tokens = r->num_output_tokens();
    u.num_cached_prompt_tokens = r->num_cached_prompt_tokens;
    if (u.finish_reason != FinishReason::kNone) {
      release(r, u.finish_reason);
      any_finished = true;
    }
    if (u.has_new_token || u.finish_reason != FinishReason::kNone) out.updates.push_back(u);
  }
  if (any_finished) {
    std::erase_if(running_, [](const Request* r) { return r->status == RequestStatus::kFinished; });
    for (const RequestUpdate& u : out.updates) {
      if (u.finish_reason != FinishReason::kNone) requests_.erase(u.request_id);
    }
  }
  return out;
}

void Scheduler::apply_verified(const ScheduledRequest& s, const SampledToken& st, Request* r,
                               RequestUpdate* u) {
  const int32_t accepted = std::clamp(st.num_accepted_drafts, 0, s.num_draft_tokens);
  u->num_draft_tokens = s.num_draft_tokens;
  u->num_accepted_drafts = accepted;
  // K/V is valid for the decode token and the accepted drafts only.
  const int64_t computed =
      r->num_computed_tokens + (s.num_new_tokens - s.num_draft_tokens) + accepted;
  const auto drafts = std::span<const int32_t>(s.new_token_ids).last(s.num_draft_tokens);
  const auto& stops = r->spec.stop_token_ids;
  for (int32_t k = 0; k <= accepted && u->finish_reason == FinishReason::kNone; ++k) {
    const int32_t token = k < accepted ? drafts[k] : st.token;
    r->tokens.push_back(token);
    if (k == 0) {
      u->has_new_token = true;
      u->new_token = token;
    } else {
      u->forced_tokens.push_back(token);
    }
    if (r->num_output_tokens() > r->spec.min_tokens &&
        std::find(stops.begin(), stops.end(), token) != stops.end()) {
      u->finish_reason = FinishReason::kStop;
      u->ends_on_stop_token = true;
    } else if (r->num_output_tokens() >= r->spec.max_tokens ||
               r->num_tokens() >= options_.max_model_len) {
      u->finish_reason = FinishReason::kLength;
    }
  }
  // An end inside the accepted drafts leaves later positions uncounted.
  r->num_computed_tokens = std::min(computed, r->num_tokens() - 1);
  if (kv_->is_prefix_caching_enabled()) {
    extend_block_hashes(r->tokens, kv_->block_size(), r->spec.cache_salt, &r->block_hashes);
  }
  kv_->commit_computed(r->spec.id, r->tokens, r->block_hashes, r->num_computed_tokens);
}

const Request* Scheduler::find(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

std::vector<RequestId> Scheduler::running_ids() const {
  std::vector<RequestId> ids;
  for (const Request* r : running_) ids.push_back(r->spec.id);
  return ids;
}

std::vector<RequestId> Scheduler::waiting_ids() const {
  std::vector<RequestId> ids;
  for (const Request* r : waiting_) ids.push_back(r->spec.id);
  return ids;
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s;
  s.num_running = num_running();
  s.num_waiting = num_waiting();
  s.kv_usage = kv_->usage();
  s.prefix_query_tokens = kv_->stats().prefix_query_tokens;
  s.prefix_hit_tokens = kv_->stats().prefix_hit_tokens;
  s.num_preemptions = num_preemptions_;
  s.num_steps = num_steps_;
  for (const auto& [id, r] : requests_) {
    s.num_pending_prefill_tokens +=
        std::max<int64_t>(0, r->num_prompt_tokens - r->num_computed_tokens);
  }
  s.num_free_blocks = kv_->num_free_blocks();
  return s;
}

}  // namespace strata
