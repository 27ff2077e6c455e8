#include "disagg/disagg_metrics.h"

#include <cstdio>

namespace strata::disagg {

const char* transfer_fault_name(TransferFault fault) {
  switch (fault) {
    case TransferFault::kUnreachable:
      return "unreachable";
    case TransferFault::kClosed:
      return "closed";
    case TransferFault::kDeadline:
      return "deadline";
    case TransferFault::kCorrupt:
      return "corrupt";
    case TransferFault::kRefused:
      return "refused";
  }
  return "unknown";
}

DisaggMetrics::DisaggMetrics() {
  // A transfer takes milliseconds (a few chunks on loopback) to tens of
  // seconds (a long prompt queued behind others).
  s_.transfer_seconds.bounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                0.25,  0.5,    1.0,   2.5,  5.0,   10.0, 30.0};
  s_.transfer_seconds.counts.assign(s_.transfer_seconds.bounds.size() + 1, 0);
  for (TransferFault f :
       {TransferFault::kUnreachable, TransferFault::kClosed, TransferFault::kDeadline,
        TransferFault::kCorrupt, TransferFault::kRefused}) {
    s_.faults[transfer_fault_name(f)] = 0;
  }
}

void DisaggMetrics::add_sent(int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.bytes_sent += bytes;
  ++s_.chunks_sent;
}

void DisaggMetrics::add_received(int64_t bytes, bool verified) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.bytes_received += bytes;
  ++(verified ? s_.chunks_verified : s_.chunks_rejected);
}

void DisaggMetrics::add_read_seconds(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.read_seconds += seconds;
}

void DisaggMetrics::add_decision(bool remote) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(remote ? s_.remote_decisions : s_.local_decisions);
}

void DisaggMetrics::add_fault(TransferFault fault, int64_t recomputed_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  ++s_.faults[transfer_fault_name(fault)];
  s_.recomputed_tokens += recomputed_tokens;
}

void DisaggMetrics::observe_transfer(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  observe(s_.transfer_seconds, seconds);
}

void DisaggMetrics::add_active(int64_t delta) {
  std::lock_guard<std::mutex> lock(mu_);
  s_.transfers_active += delta;
}

void DisaggMetrics::add_ask_served() {
  std::lock_guard<std::mutex> lock(mu_);
  ++s_.asks_served;
}

void DisaggMetrics::add_migration(bool out) {
  std::lock_guard<std::mutex> lock(mu_);
  ++(out ? s_.migrated_out : s_.migrated_in);
}

DisaggMetricsSnapshot DisaggMetrics::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return s_;
}

std::string DisaggMetrics::to_prometheus_text(const std::string& model_name) const {
  const DisaggMetricsSnapshot s = snapshot();
  const std::string model = model_name.empty() ? "" : "model_name=\"" + model_name + "\"";
  auto labels = [&](const std::string& extra) {
    std::string l = model;
    if (!extra.empty()) l += (l.empty() ? "" : ",") + extra;
    return l.empty() ? std::string() : "{" + l + "}";
  };
  std::string out;
  auto line = [&](const std::string& name, const std::string& extra, double v) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), " %.17g\n", v);
    out += name + labels(extra) + buf;
  };
  out += "# HELP strata:kv_transfer_bytes_total KV chunk bytes over the transfer channel.\n";
  out += "# TYPE strata:kv_transfer_bytes_total counter\n";
  line("strata:kv_transfer_bytes_total", "direction=\"sent\"", static_cast<double>(s.bytes_sent));
  line("strata:kv_transfer_bytes_total", "direction=\"received\"",
       static_cast<double>(s.bytes_received));
  out += "# HELP strata:kv_transfer_chunks_total KV chunks sent, and received by check result.\n";
  out += "# TYPE strata:kv_transfer_chunks_total counter\n";
  line("strata:kv_transfer_chunks_total", "result=\"sent\"", static_cast<double>(s.chunks_sent));
  line("strata:kv_transfer_chunks_total", "result=\"verified\"",
       static_cast<double>(s.chunks_verified));
  line("strata:kv_transfer_chunks_total", "result=\"rejected\"",
       static_cast<double>(s.chunks_rejected));
  out += "# HELP strata:prefill_decisions_total Where a decode worker prefilled a prompt.\n";
  out += "# TYPE strata:prefill_decisions_total counter\n";
  line("strata:prefill_decisions_total", "where=\"local\"", static_cast<double>(s.local_decisions));
  line("strata:prefill_decisions_total", "where=\"remote\"",
       static_cast<double>(s.remote_decisions));
  out += "# HELP strata:kv_transfer_faults_total Remote prefills that ended early, by cause.\n";
  out += "# TYPE strata:kv_transfer_faults_total counter\n";
  for (const auto& [kind, n] : s.faults) {
    line("strata:kv_transfer_faults_total", "kind=\"" + kind + "\"", static_cast<double>(n));
  }
  out +=
      "# HELP strata:kv_transfer_recomputed_tokens_total Prompt tokens asked of a prefill "
      "worker and computed here after a fault.\n";
  out += "# TYPE strata:kv_transfer_recomputed_tokens_total counter\n";
  line("strata:kv_transfer_recomputed_tokens_total", "", static_cast<double>(s.recomputed_tokens));
  out += "# HELP strata:kv_transfers_active Open KV transfers on this worker.\n";
  out += "# TYPE strata:kv_transfers_active gauge\n";
  line("strata:kv_transfers_active", "", static_cast<double>(s.transfers_active));
  out += "# HELP strata:kv_transfer_asks_served_total KV asks this worker's channel answered.\n";
  out += "# TYPE strata:kv_transfer_asks_served_total counter\n";
  line("strata:kv_transfer_asks_served_total", "", static_cast<double>(s.asks_served));
  out +=
      "# HELP strata:requests_migrated_total Running requests handed to (out) or taken from "
      "(in) another decode worker.\n";
  out += "# TYPE strata:requests_migrated_total counter\n";
  line("strata:requests_migrated_total", "direction=\"out\"", static_cast<double>(s.migrated_out));
  line("strata:requests_migrated_total", "direction=\"in\"", static_cast<double>(s.migrated_in));
  out += "# HELP strata:kv_transfer_read_seconds_total Seconds spent reading chunk payloads.\n";
  out += "# TYPE strata:kv_transfer_read_seconds_total counter\n";
  line("strata:kv_transfer_read_seconds_total", "", s.read_seconds);
  out += "# HELP strata:kv_transfer_seconds A remote prefill: ask to last chunk.\n";
  out += "# TYPE strata:kv_transfer_seconds histogram\n";
  int64_t cumulative = 0;
  for (size_t i = 0; i < s.transfer_seconds.bounds.size(); ++i) {
    cumulative += s.transfer_seconds.counts[i];
    char le[48];
    std::snprintf(le, sizeof(le), "le=\"%g\"", s.transfer_seconds.bounds[i]);
    line("strata:kv_transfer_seconds_bucket", le, static_cast<double>(cumulative));
  }
  line("strata:kv_transfer_seconds_bucket", "le=\"+Inf\"",
       static_cast<double>(s.transfer_seconds.count));
  line("strata:kv_transfer_seconds_sum", "", s.transfer_seconds.sum);
  line("strata:kv_transfer_seconds_count", "", static_cast<double>(s.transfer_seconds.count));
  return out;
}

}  // namespace strata::disagg
