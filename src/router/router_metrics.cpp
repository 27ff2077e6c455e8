#include "router/router_metrics.h"

#include <cstdio>

namespace strata::router {
namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

void header(std::string* out, const std::string& name, const char* type, const std::string& help) {
  *out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string* out, const std::string& name, const std::string& labels, int64_t v) {
  *out += name;
  if (!labels.empty()) *out += "{" + labels + "}";
  *out += " " + std::to_string(v) + "\n";
}

// A replica URL as a label value: quotes and backslashes escaped.
std::string label(const std::string& url) {
  std::string v;
  for (char c : url) {
    if (c == '"' || c == '\\') v += '\\';
    if (c == '\n') {
      v += "\\n";
      continue;
    }
    v += c;
  }
  return "replica=\"" + v + "\"";
}

}  // namespace

void LatencyHistogram::observe(double seconds) {
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  buckets_[i].fetch_add(1);
  count_.fetch_add(1);
  sum_ns_.fetch_add(static_cast<int64_t>(seconds * 1e9));
}

void LatencyHistogram::append_prometheus(const std::string& name, const std::string& help,
                                         std::string* out) const {
  header(out, name, "histogram", help);
  int64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += buckets_[i].load();
    *out +=
        name + "_bucket{le=\"" + number(kBounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  cumulative += buckets_[kBounds.size()].load();
  *out += name + "_bucket{le=\"+Inf\"} " + std::to_string(cumulative) + "\n";
  *out += name + "_sum " + number(static_cast<double>(sum_ns_.load()) / 1e9) + "\n";
  *out += name + "_count " + std::to_string(cumulative) + "\n";
}

std::string RouterMetrics::to_prometheus_text(
    const std::vector<std::shared_ptr<Replica>>& replicas) const {
  std::string out;
  auto counter = [&](const char* name, const char* help, int64_t v) {
    header(&out, name, "counter", help);
    sample(&out, name, "", v);
  };
  counter("strata_router_requests_total", "Generation requests received.", num_requests.load());
  counter("strata_router_failed_requests_total",
          "Generation requests every tried replica failed before the first byte.",
          num_failed.load());
  counter("strata_router_mid_stream_failures_total",
          "Streams a replica broke off after the first byte (ended with an error event).",
          num_failed_mid_stream.load());
  counter("strata_router_no_replica_total", "Requests refused because no replica was available.",
          num_no_replica.load());
  counter("strata_router_client_disconnects_total",
          "Requests whose client went away (the replica call was cancelled).",
          num_client_disconnects.load());
  counter("strata_router_migrations_total",
          "Running requests a draining worker handed over and the router continued on another.",
          num_migrations.load());
  counter("strata_router_probes_total", "Prefix probes sent to replicas.", num_probes.load());
  counter("strata_router_probe_failures_total",
          "Prefix probes that timed out, failed or were malformed (scored by load alone).",
          num_probe_failures.load());
  counter("strata_router_reloads_total", "Replica list reloads.", num_reloads.load());
  added_latency.append_prometheus(
      "strata_router_added_latency_seconds",
      "Time a request spent in the router before it was sent to a replica.", &out);

  struct PerReplica {
    const char* name;
    const char* type;
    const char* help;
    int64_t (*get)(Replica&);
  };
  static const PerReplica kPerReplica[] = {
      {"strata_router_replica_routed_total", "counter",
       "Generation requests sent to the replica (tries included).",
       [](Replica& r) { return r.num_routed.load(); }},
      {"strata_router_replica_retries_total", "counter",
       "Requests retried on another replica after failing here before the first byte.",
       [](Replica& r) { return r.num_retries.load(); }},
      {"strata_router_replica_failures_total", "counter",
       "Failed requests and health checks of the replica.",
       [](Replica& r) { return r.num_failures.load(); }},
      {"strata_router_replica_ejections_total", "counter",
       "Times the replica's circuit breaker opened.", [](Replica& r) { return r.num_ejections(); }},
      {"strata_router_replica_predicted_cached_tokens_total", "counter",
       "Prompt tokens the router predicted the replica held (requests with a probe answer "
       "whose usage came back).",
       [](Replica& r) { return r.predicted_cached_tokens.load(); }},
      {"strata_router_replica_actual_cached_tokens_total", "counter",
       "Cached prompt tokens the replica reported in usage (every request whose usage came "
       "back).",
       [](Replica& r) { return r.actual_cached_tokens.load(); }},
      {"strata_router_replica_in_flight", "gauge", "Requests from the router not finished yet.",
       [](Replica& r) { return r.num_in_flight.load(); }},
      {"strata_router_replica_available", "gauge",
       "1 when the replica's circuit breaker lets requests through (closed or half-open).",
       [](Replica& r) -> int64_t { return r.state() != CircuitBreaker::State::kOpen ? 1 : 0; }},
  };
  for (const PerReplica& m : kPerReplica) {
    header(&out, m.name, m.type, m.help);
    for (const auto& r : replicas) sample(&out, m.name, label(r->url()), m.get(*r));
  }
  return out;
}

}  // namespace strata::router
