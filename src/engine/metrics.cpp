#include "engine/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace strata {
namespace {

HistogramSnapshot make_histogram(std::vector<double> bounds) {
  HistogramSnapshot h;
  h.counts.assign(bounds.size() + 1, 0);
  h.bounds = std::move(bounds);
  return h;
}

// Latency buckets: a CPU step takes ~10 ms (tiny model) to seconds (a long
// prefill chunk); requests last up to minutes.
std::vector<double> token_bounds() {
  return {0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.15, 0.2,  0.3,  0.4,
          0.5,   0.75, 1.0,  2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0};
}
std::vector<double> request_bounds() {
  return {0.1,  0.3,  0.5,  0.8,  1.0,   1.5,   2.0,   2.5,   5.0,    10.0,  15.0,
          20.0, 30.0, 40.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

// The shortest text that reads back as exactly `v` ("0.1", not
// "0.10000000000000001"), in the spellings Prometheus parses for the rest.
std::string fmt_double(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

class TextWriter {
 public:
  explicit TextWriter(std::string_view model_name) : model_name_(model_name) {}

  std::string labels(std::string_view extra = "") const {
    std::string l;
    if (!model_name_.empty()) l = "model_name=\"" + escape(model_name_) + "\"";
    if (!extra.empty()) {
      if (!l.empty()) l += ",";
      l += extra;
    }
    return l.empty() ? "" : "{" + l + "}";
  }

  void header(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP strata:" + std::string(name) + " " + std::string(help) + "\n";
    out_ += "# TYPE strata:" + std::string(name) + " " + std::string(type) + "\n";
  }
  void sample(std::string_view name, std::string_view extra_labels, const std::string& value) {
    out_ += "strata:" + std::string(name) + labels(extra_labels) + " " + value + "\n";
  }
  void gauge(std::string_view name, std::string_view help, double v) {
    header(name, "gauge", help);
    sample(name, "", fmt_double(v));
  }
  // A counter's samples are named `name`_total, and in the 0.0.4 text format
  // its HELP and TYPE lines must name the samples exactly (a parser reads a
  // sample whose name differs as a new, untyped family without help).
  void counter_header(std::string_view name, std::string_view help) {
    header(std::string(name) + "_total", "counter", help);
  }
  void counter(std::string_view name, std::string_view help, int64_t v) {
    counter_header(name, help);
    sample(std::string(name) + "_total", "", std::to_string(v));
  }
  void histogram(std::string_view name, std::string_view help, const HistogramSnapshot& h) {
    header(name, "histogram", help);
    int64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += h.counts[i];
      sample(std::string(name) + "_bucket", "le=\"" + fmt_double(h.bounds[i]) + "\"",
             std::to_string(cumulative));
    }
    sample(std::string(name) + "_bucket", "le=\"+Inf\"", std::to_string(h.count));
    sample(std::string(name) + "_sum", "", fmt_double(h.sum));
    sample(std::string(name) + "_count", "", std::to_string(h.count));
  }
  // One labelled series of a histogram whose header was written already.
  void histogram_series(std::string_view name, const std::string& label,
                        const HistogramSnapshot& h) {
    int64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += h.counts[i];
      sample(std::string(name) + "_bucket", label + ",le=\"" + fmt_double(h.bounds[i]) + "\"",
             std::to_string(cumulative));
    }
    sample(std::string(name) + "_bucket", label + ",le=\"+Inf\"", std::to_string(h.count));
    sample(std::string(name) + "_sum", label, fmt_double(h.sum));
    sample(std::string(name) + "_count", label, std::to_string(h.count));
  }
  std::string& out() { return out_; }

 private:
  static std::string escape(std::string_view s) {
    std::string r;
    for (char c : s) {
      if (c == '\\' || c == '"') r += '\\';
      if (c == '\n') {
        r += "\\n";
        continue;
      }
      r += c;
    }
    return r;
  }

  std::string model_name_;
  std::string out_;
};

}  // namespace

void observe(HistogramSnapshot& h, double seconds) {
  const size_t i = static_cast<size_t>(std::lower_bound(h.bounds.begin(), h.bounds.end(), seconds) -
                                       h.bounds.begin());
  ++h.counts[i];
  h.sum += seconds;
  ++h.count;
}

double histogram_quantile(const HistogramSnapshot& h, double q) {
  if (h.count == 0) return 0.0;
  const double rank = q * static_cast<double>(h.count);
  int64_t cumulative = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    const int64_t prev = cumulative;
    cumulative += h.counts[i];
    if (static_cast<double>(cumulative) >= rank && h.counts[i] > 0) {
      if (i == h.bounds.size()) return h.bounds.empty() ? 0.0 : h.bounds.back();
      const double lo = i == 0 ? 0.0 : h.bounds[i - 1];
      const double hi = h.bounds[i];
      return lo + (hi - lo) * (rank - static_cast<double>(prev)) / static_cast<double>(h.counts[i]);
    }
  }
  return h.bounds.empty() ? 0.0 : h.bounds.back();
}

Metrics::Metrics() {
  s_.time_to_first_token = make_histogram(token_bounds());
  s_.inter_token_latency = make_histogram(token_bounds());
  s_.e2e_request_latency = make_histogram(request_bounds());
  s_.request_queue_time = make_histogram(request_bounds());
  s_.request_prefill_time = make_histogram(request_bounds());
  s_.request_decode_time = make_histogram(request_bounds());
  s_.kv_load_time = make_histogram(token_bounds());
}

void Metrics::observe_time_to_first_token(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  observe(s_.time_to_first_token, seconds);
}
void Metrics::observe_inter_token_latency(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  observe(s_.inter_token_latency, seconds);
}
void Metrics::observe_e2e_request_latency(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  observe(s_.e2e_request_latency, seconds);
}
void Metrics::observe_request_queue_time(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  observe(s_.request_queue_time, seconds);
}
void Metrics::observe_request_prefill_time(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  observe(s_.request_prefill_time, seconds);
}
void Metrics::observe_request_decode_time(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  observe(s_.request_decode_time, seconds);
}

void Metrics::set_scheduler_state(int64_t num_running, int64_t num_waiting, double kv_usage,
                                  int64_t prefix_query_tokens, int64_t prefix_hit_tokens,
                                  int64_t num_preemptions) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.num_requests_running = num_running;
  s_.num_requests_waiting = num_waiting;
  s_.kv_cache_usage = kv_usage;
  s_.prefix_cache_queries_tokens = prefix_query_tokens;
  s_.prefix_cache_hits_tokens = prefix_hit_tokens;
  s_.num_preemptions = num_preemptions;
}

MetricsSnapshot Metrics::load() const {
  MetricsSnapshot out;
  std::lock_guard<std::mutex> lock(mu_);
  out.num_requests_running = s_.num_requests_running;
  out.num_requests_waiting = s_.num_requests_waiting;
  out.num_requests_loading = s_.num_requests_loading;
  out.kv_cache_usage = s_.kv_cache_usage;
  out.num_pending_prefill_tokens = s_.num_pending_prefill_tokens;
  out.num_free_kv_blocks = s_.num_free_kv_blocks;
  out.prefill_tokens_per_s = s_.prefill_tokens_per_s;
  out.decode_tokens_per_s = s_.decode_tokens_per_s;
  return out;
}

void Metrics::set_load_state(int64_t num_pending_prefill_tokens, int64_t num_free_kv_blocks) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.num_pending_prefill_tokens = num_pending_prefill_tokens;
  s_.num_free_kv_blocks = num_free_kv_blocks;
}

void Metrics::observe_step(int64_t num_prefill_tokens, int64_t num_sampled, double seconds) {
  if (!(seconds > 0.0)) return;
  // A step's prompt tokens share it with its decodes, so steps with few
  // prompt tokens say little about the prefill rate: only steps that are
  // mostly prefill update it; decode-only steps update the decode rate.
  constexpr double kWeight = 0.2;
  auto blend = [](double old_rate, double rate) {
    return old_rate > 0.0 ? (1.0 - kWeight) * old_rate + kWeight * rate : rate;
  };
  std::lock_guard<std::mutex> lock(mu_);
  if (num_prefill_tokens >= 16 && num_prefill_tokens >= 2 * num_sampled) {
    s_.prefill_tokens_per_s =
        blend(s_.prefill_tokens_per_s, static_cast<double>(num_prefill_tokens) / seconds);
  } else if (num_prefill_tokens == 0 && num_sampled > 0) {
    s_.decode_tokens_per_s =
        blend(s_.decode_tokens_per_s, static_cast<double>(num_sampled) / seconds);
  }
}

void Metrics::observe_spec_decode(const SpecDecodeStep& step) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.spec_decode_enabled = true;
  s_.spec_decode_num_drafts += step.num_drafts;
  s_.spec_decode_num_draft_tokens += step.num_draft_tokens;
  s_.spec_decode_num_accepted_tokens += step.num_accepted_tokens;
  s_.spec_decode_acceptance_rate = step.acceptance_rate;
  s_.spec_decode_tokens_per_step = step.tokens_per_step;
  s_.spec_decode_cost_ratio = step.cost_ratio;
  s_.spec_decode_realised_gain = step.realised_gain;
  s_.spec_decode_num_vetoes = step.num_vetoes;
  s_.spec_decode_is_drafting = step.is_drafting;
}

void Metrics::add_prompt_tokens(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.prompt_tokens += n;
}

void Metrics::add_generation_tokens(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.generation_tokens += n;
}

void Metrics::add_finished(FinishReason reason) {
  std::lock_guard<std::mutex> lock(mu_);
  switch (reason) {
    case FinishReason::kStop:
      ++s_.request_success_stop;
      break;
    case FinishReason::kLength:
      ++s_.request_success_length;
      break;
    case FinishReason::kAbort:
      ++s_.request_success_abort;
      break;
    case FinishReason::kError:
      ++s_.request_success_error;
      break;
    case FinishReason::kNone:
      break;
  }
}

void Metrics::add_prompt_tokens_cached(const std::string& tier, int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.prompt_tokens_cached_by_tier[tier] += n;
}

void Metrics::set_num_requests_loading(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.num_requests_loading = n;
}

void Metrics::observe_kv_load_time(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  observe(s_.kv_load_time, seconds);
}

void Metrics::add_forward_profile(const ForwardProfileTotals& totals) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.forward.add(totals);
}

void Metrics::set_machine_ceilings(const MachineCeilings& ceilings) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.ceilings = ceilings;
}

void Metrics::set_tier_source(std::function<std::vector<TierMetricsSnapshot>()> source) {
  std::lock_guard<std::mutex> lock(source_mu_);
  tier_source_ = std::move(source);
}

MetricsSnapshot Metrics::snapshot() const {
  MetricsSnapshot s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s = s_;
  }
  std::lock_guard<std::mutex> lock(source_mu_);
  if (tier_source_) s.tiers = tier_source_();
  return s;
}

std::string Metrics::to_prometheus_text(std::string_view model_name) const {
  const MetricsSnapshot s = snapshot();
  TextWriter w(model_name);
  w.gauge("num_requests_running", "Requests in model execution batches.",
          static_cast<double>(s.num_requests_running));
  w.gauge("num_requests_waiting", "Requests waiting to be processed.",
          static_cast<double>(s.num_requests_waiting));
  w.gauge("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", s.kv_cache_usage);
  w.counter("prefix_cache_queries", "Prefix cache queries, in queried tokens.",
            s.prefix_cache_queries_tokens);
  w.counter("prefix_cache_hits", "Prefix cache hits, in cached tokens.",
            s.prefix_cache_hits_tokens);
  w.counter("num_preemptions", "Cumulative number of preemptions.", s.num_preemptions);
  w.counter("prompt_tokens", "Number of prefill tokens processed.", s.prompt_tokens);
  w.counter("generation_tokens", "Number of generation tokens processed.", s.generation_tokens);
  w.counter_header("request_success", "Count of successfully processed requests.");
  w.sample("request_success_total", "finished_reason=\"stop\"",
           std::to_string(s.request_success_stop));
  w.sample("request_success_total", "finished_reason=\"length\"",
           std::to_string(s.request_success_length));
  w.sample("request_success_total", "finished_reason=\"abort\"",
           std::to_string(s.request_success_abort));
  w.sample("request_success_total", "finished_reason=\"error\"",
           std::to_string(s.request_success_error));
  w.histogram("time_to_first_token_seconds", "Histogram of time to first token in seconds.",
              s.time_to_first_token);
  w.histogram("inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
              s.inter_token_latency);
  w.histogram("e2e_request_latency_seconds", "Histogram of end to end request latency in seconds.",
              s.e2e_request_latency);
  w.histogram("request_queue_time_seconds", "Histogram of time spent waiting in the queue.",
              s.request_queue_time);
  w.histogram("request_prefill_time_seconds", "Histogram of time spent in the prefill phase.",
              s.request_prefill_time);
  w.histogram("request_decode_time_seconds", "Histogram of time spent in the decode phase.",
              s.request_decode_time);
  if (!s.tiers.empty() || !s.prompt_tokens_cached_by_tier.empty()) {
    w.counter_header(
        "prompt_tokens_cached",
        "Prompt tokens served without compute, by source: pool (prefix cache) or a KV tier.");
    for (const auto& [tier, n] : s.prompt_tokens_cached_by_tier) {
      w.sample("prompt_tokens_cached_total", "tier=\"" + tier + "\"", std::to_string(n));
    }
    w.header("prompt_tokens_cached_fraction", "gauge",
             "Fraction of all prompt tokens served by each source so far.");
    for (const auto& [tier, n] : s.prompt_tokens_cached_by_tier) {
      const double fraction =
          s.prompt_tokens > 0 ? static_cast<double>(n) / static_cast<double>(s.prompt_tokens) : 0.0;
      w.sample("prompt_tokens_cached_fraction", "tier=\"" + tier + "\"", fmt_double(fraction));
    }
    w.gauge("num_requests_loading", "Requests waiting for KV chunks from a tier.",
            static_cast<double>(s.num_requests_loading));
    w.histogram("kv_load_time_seconds", "Histogram of one request's KV tier load in seconds.",
                s.kv_load_time);
  }
  if (!s.forward.empty()) {
    // Per phase of the forward pass and roofline bound: time, the floor of
    // the same work at the measured ceilings (floor / seconds = fraction of
    // the ceiling achieved), the arithmetic and the bytes.
    struct PhaseField {
      const char* name;
      const char* help;
      double PhaseTotals::*field;
      bool needs_floor;
    };
    static const PhaseField kPhaseFields[] = {
        {"forward_phase_seconds", "Seconds of forward passes spent in each phase.",
         &PhaseTotals::seconds, false},
        {"forward_phase_floor_seconds",
         "Roofline floor of the same work at the machine's measured ceilings, seconds "
         "(floor over seconds is the fraction of the ceiling achieved).",
         &PhaseTotals::floor_seconds, true},
        {"forward_phase_operations", "Arithmetic operations of each phase (multiply-add = 2).",
         &PhaseTotals::ops, false},
        {"forward_phase_bytes", "Bytes each phase moves to or from memory at least once.",
         &PhaseTotals::bytes, false},
    };
    for (const PhaseField& pf : kPhaseFields) {
      if (pf.needs_floor && !s.ceilings.known()) continue;
      w.counter_header(pf.name, pf.help);
      for (int p = 0; p < kNumForwardPhases; ++p) {
        for (int b = 0; b < kNumRooflineBounds; ++b) {
          const PhaseTotals& t = s.forward.by[p][b];
          if (t.calls == 0) continue;
          if (pf.needs_floor && static_cast<RooflineBound>(b) == RooflineBound::kNone) continue;
          w.sample(std::string(pf.name) + "_total",
                   std::string("phase=\"") + forward_phase_name(static_cast<ForwardPhase>(p)) +
                       "\",bound=\"" + roofline_bound_name(static_cast<RooflineBound>(b)) + "\"",
                   fmt_double(t.*(pf.field)));
        }
      }
    }
  }
  if (s.ceilings.known()) {
    w.gauge("machine_read_bandwidth_bytes_per_second",
            "Memory read bandwidth measured at start-up.", s.ceilings.read_bw_gbs * 1e9);
    w.gauge("machine_peak_fp32_flops_per_second", "Peak fp32 FMA rate measured at start-up.",
            s.ceilings.fp32_gflops * 1e9);
    w.gauge("machine_peak_int8_ops_per_second",
            "Peak int8 dot-product rate (VNNI or AVX2) measured at start-up.",
            s.ceilings.int8_gops * 1e9);
    if (s.ceilings.amx_int8_gops > 0) {
      w.gauge("machine_peak_amx_int8_ops_per_second",
              "Peak int8 rate of the AMX tile unit measured at start-up.",
              s.ceilings.amx_int8_gops * 1e9);
    }
  }
  if (s.spec_decode_enabled) {
    w.counter("spec_decode_num_drafts", "Requests' draft proposals verified.",
              s.spec_decode_num_drafts);
    w.counter("spec_decode_num_draft_tokens", "Draft tokens verified.",
              s.spec_decode_num_draft_tokens);
    w.counter("spec_decode_num_accepted_tokens", "Draft tokens accepted.",
              s.spec_decode_num_accepted_tokens);
    w.gauge("spec_decode_acceptance_rate", "Accepted over verified draft tokens.",
            s.spec_decode_acceptance_rate);
    w.gauge("spec_decode_tokens_per_step",
            "Tokens per request per decode step (1 + accepted drafts).",
            s.spec_decode_tokens_per_step);
    w.gauge("spec_decode_cost_ratio",
            "Estimated seconds of the latest drafting step over a plain step of its batch.",
            s.spec_decode_cost_ratio);
    w.gauge("spec_decode_realised_gain",
            "Median expected tokens per measured second of the latest drafting steps over plain "
            "steps of their batch size (below 1 stops drafting there for a while).",
            s.spec_decode_realised_gain);
    w.counter("spec_decode_num_vetoes",
              "Times drafting stopped at a batch size because it measured slower than plain.",
              s.spec_decode_num_vetoes);
    w.gauge("spec_decode_drafting", "1 when the latest decode step verified drafts.",
            s.spec_decode_is_drafting ? 1.0 : 0.0);
  }
  struct TierCounter {
    const char* name;
    const char* type;
    const char* help;
    int64_t TierMetricsSnapshot::*field;
  };
  static const TierCounter kTierCounters[] = {
      {"kv_tier_hits", "counter", "KV tier chunk lookups that hit.", &TierMetricsSnapshot::hits},
      {"kv_tier_misses", "counter", "KV tier chunk lookups that missed.",
       &TierMetricsSnapshot::misses},
      {"kv_tier_read_bytes", "counter", "KV chunk payload bytes read from the tier.",
       &TierMetricsSnapshot::bytes_read},
      {"kv_tier_written_bytes", "counter", "KV chunk payload bytes written to the tier.",
       &TierMetricsSnapshot::bytes_written},
      {"kv_tier_evictions", "counter", "KV chunks evicted from the tier.",
       &TierMetricsSnapshot::evictions},
      {"kv_tier_errors", "counter", "KV tier faults (I/O errors, timeouts, corrupt chunks).",
       &TierMetricsSnapshot::errors},
      {"kv_tier_dropped_stores", "counter", "KV chunk stores dropped (queue full, tier down).",
       &TierMetricsSnapshot::dropped_stores},
      {"kv_tier_stored_chunks", "gauge", "KV chunks the tier holds.",
       &TierMetricsSnapshot::stored_chunks},
      {"kv_tier_stored_bytes", "gauge", "KV chunk payload bytes the tier holds.",
       &TierMetricsSnapshot::stored_bytes},
  };
  if (!s.tiers.empty()) {
    for (const TierCounter& c : kTierCounters) {
      const bool is_counter = std::string_view(c.type) == "counter";
      if (is_counter) {
        w.counter_header(c.name, c.help);
      } else {
        w.header(c.name, c.type, c.help);
      }
      for (const TierMetricsSnapshot& t : s.tiers) {
        w.sample(std::string(c.name) + (is_counter ? "_total" : ""), "tier=\"" + t.tier + "\"",
                 std::to_string(t.*(c.field)));
      }
    }
    w.header("kv_tier_get_latency_seconds", "histogram", "Histogram of KV tier get latency.");
    for (const TierMetricsSnapshot& t : s.tiers) {
      w.histogram_series("kv_tier_get_latency_seconds", "tier=\"" + t.tier + "\"", t.get_latency);
    }
    w.header("kv_tier_put_latency_seconds", "histogram", "Histogram of KV tier put latency.");
    for (const TierMetricsSnapshot& t : s.tiers) {
      w.histogram_series("kv_tier_put_latency_seconds", "tier=\"" + t.tier + "\"", t.put_latency);
    }
  }
  return std::move(w.out());
}

}  // namespace strata
