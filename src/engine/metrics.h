// Metrics: the serving engine's counters, gauges and latency histograms, the
// source a server exports as Prometheus text (vLLM's metric names, prefixed
// "strata:").
//
// The engine thread records; any thread reads (snapshot(),
// to_prometheus_text()). Thread-safe: one mutex, taken once per record call
// (at most a few times per token), never across a model step.
//
// Histograms use fixed Prometheus-style bucket upper bounds (seconds), chosen
// for CPU serving where a step takes 10 ms .. seconds; counts are cumulative
// in the exported text as Prometheus requires ("le" buckets + "+Inf").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/roofline.h"
#include "runtime/forward_profile.h"
#include "sched/request.h"

namespace strata {

// A histogram's state: counts[i] observations <= bounds[i] (not cumulative),
// counts.back() those above every bound.
struct HistogramSnapshot {
  std::vector<double> bounds;   // ascending upper bounds
  std::vector<int64_t> counts;  // [bounds.size() + 1]
  double sum = 0.0;
  int64_t count = 0;
};

// One KV tier's figures as exported (copied from its TierStats).
struct TierMetricsSnapshot {
  std::string tier;  // "ram", "disk", "redis"
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t bytes_read = 0;
  int64_t bytes_written = 0;
  int64_t evictions = 0;
  int64_t errors = 0;
  int64_t dropped_stores = 0;
  int64_t stored_chunks = 0;  // gauge
  int64_t stored_bytes = 0;   // gauge
  HistogramSnapshot get_latency;
  HistogramSnapshot put_latency;
};

struct MetricsSnapshot {
  HistogramSnapshot time_to_first_token;   // arrival -> first token
  HistogramSnapshot inter_token_latency;   // between consecutive tokens of a choice
  HistogramSnapshot e2e_request_latency;   // arrival -> finish
  HistogramSnapshot request_queue_time;    // arrival -> first scheduled
  HistogramSnapshot request_prefill_time;  // first scheduled -> first token
  HistogramSnapshot request_decode_time;   // first token -> finish
  // Gauges, as of the last engine step.
  int64_t num_requests_running = 0;
  int64_t num_requests_waiting = 0;
  double kv_cache_usage = 0.0;  // fraction in [0, 1]
  // Counters (monotone).
  int64_t prefix_cache_queries_tokens = 0;
  int64_t prefix_cache_hits_tokens = 0;
  int64_t num_preemptions = 0;
  int64_t prompt_tokens = 0;
  int64_t generation_tokens = 0;
  // Finished choices by reason: stop, length, abort, error.
  int64_t request_success_stop = 0;
  int64_t request_success_length = 0;
  int64_t request_success_abort = 0;
  int64_t request_success_error = 0;
  // Tiered KV cache: prompt tokens served without compute, by where they came
  // from ("pool" = the engine's own prefix cache; "ram", "disk", "redis" =
  // loaded from that tier at admission). Divided by prompt_tokens, the
  // fraction of prompt tokens each tier served.
  std::map<std::string, int64_t> prompt_tokens_cached_by_tier;
  int64_t num_requests_loading = 0;        // gauge: requests waiting for a tier load
  HistogramSnapshot kv_load_time;          // one tier load of a request (lookup + fetch)
  std::vector<TierMetricsSnapshot> tiers;  // filled by snapshot() from the tier source
  // Load, as a router's probe reads it (gauges, as of the last step).
  int64_t num_pending_prefill_tokens = 0;  // prompt tokens admitted, not yet computed
  int64_t num_free_kv_blocks = 0;
  // Measured rates (exponentially weighted over recent steps): prompt tokens
  // per second of steps that prefill, tokens per second of decode-only steps;
  // 0 until measured.
  double prefill_tokens_per_s = 0.0;
  double decode_tokens_per_s = 0.0;
  // Speculative decoding (exported only when it is on): vLLM's counters
  // (requests' drafts verified, draft tokens, accepted ones), and gauges:
  // accepted / draft tokens, tokens per request per decode step (1 when
  // nothing is accepted), the measured cost of a drafting step over a plain
  // one at the latest batch size, and whether the gate drafts now.
  bool spec_decode_enabled = false;
  int64_t spec_decode_num_drafts = 0;
  int64_t spec_decode_num_draft_tokens = 0;
  int64_t spec_decode_num_accepted_tokens = 0;
  double spec_decode_acceptance_rate = 0.0;
  double spec_decode_tokens_per_step = 0.0;
  double spec_decode_cost_ratio = 0.0;
  double spec_decode_realised_gain = 0.0;
  int64_t spec_decode_num_vetoes = 0;
  bool spec_decode_is_drafting = false;
  // The forward passes' time and work per phase and roofline bound, with
  // their floors at the machine's ceilings (runtime/forward_profile.h);
  // ceilings unknown (not measured) leave the floors and gauges out.
  ForwardProfileTotals forward;
  MachineCeilings ceilings;
};

// The speculative decoding figures of one step (counters are increments).
struct SpecDecodeStep {
  int64_t num_drafts = 0;  // requests that verified drafts
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  double acceptance_rate = 0.0;  // gauges, as the gate measures them
  double tokens_per_step = 0.0;
  double cost_ratio = 0.0;
  double realised_gain = 0.0;
  int64_t num_vetoes = 0;  // total so far
  bool is_drafting = false;
};

class Metrics {
 public:
  Metrics();

  void observe_time_to_first_token(double seconds);
  void observe_inter_token_latency(double seconds);
  void observe_e2e_request_latency(double seconds);
  void observe_request_queue_time(double seconds);
  void observe_request_prefill_time(double seconds);
  void observe_request_decode_time(double seconds);

  // Gauges and the scheduler's running totals (absolute values).
  void set_scheduler_state(int64_t num_running, int64_t num_waiting, double kv_usage,
                           int64_t prefix_query_tokens, int64_t prefix_hit_tokens,
                           int64_t num_preemptions);
  void add_prompt_tokens(int64_t n);
  void add_generation_tokens(int64_t n);
  void add_finished(FinishReason reason);
  // Tiered KV cache.
  void add_prompt_tokens_cached(const std::string& tier, int64_t n);
  void set_num_requests_loading(int64_t n);
  // Load gauges (see MetricsSnapshot).
  void set_load_state(int64_t num_pending_prefill_tokens, int64_t num_free_kv_blocks);
  // One step that computed `num_prefill_tokens` prompt tokens and sampled
  // `num_sampled` tokens in `seconds`: updates the measured rates.
  void observe_step(int64_t num_prefill_tokens, int64_t num_sampled, double seconds);
  void observe_kv_load_time(double seconds);
  void observe_spec_decode(const SpecDecodeStep& step);
  void add_forward_profile(const ForwardProfileTotals& totals);
  void set_machine_ceilings(const MachineCeilings& ceilings);
  // Where snapshot() reads the tiers' own counters (called on the reading
  // thread; must be thread-safe). nullptr detaches it (before the tiers go).
  void set_tier_source(std::function<std::vector<TierMetricsSnapshot>()> source);

  MetricsSnapshot snapshot() const;
  // The load gauges and rates alone, cheaply (no histograms, no tiers):
  // snapshot() with everything else left empty.
  MetricsSnapshot load() const;
  // Prometheus text exposition format (version 0.0.4). `model_name`, when
  // non-empty, becomes a model_name label on every sample.
  std::string to_prometheus_text(std::string_view model_name = "") const;

 private:
  mutable std::mutex mu_;
  MetricsSnapshot s_;
  mutable std::mutex source_mu_;  // guards tier_source_; never held with mu_
  std::function<std::vector<TierMetricsSnapshot>()> tier_source_;
};

// Adds `seconds` to `h`.
void observe(HistogramSnapshot& h, double seconds);
// The q-quantile (0..1) estimated by linear interpolation inside the bucket,
// as Prometheus' histogram_quantile does; 0 when empty.
double histogram_quantile(const HistogramSnapshot& h, double q);

}  // namespace strata
