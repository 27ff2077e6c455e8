#include "loadgen/result_json.h"

#include <cmath>
#include <cstdio>
#include <fstream>

namespace strata::loadgen {

using nlohmann::json;

std::string percentile_key(double p) {
  if (p == std::floor(p)) return std::to_string(static_cast<int64_t>(p));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", p);
  return buf;
}

namespace {

void add_stats(json* j, const char* name, const LatencyStats& st) {
  const std::string n = name;
  (*j)["mean_" + n + "_ms"] = st.mean_ms;
  (*j)["median_" + n + "_ms"] = st.median_ms;
  (*j)["std_" + n + "_ms"] = st.std_ms;
  for (const auto& [p, v] : st.percentiles_ms) (*j)["p" + percentile_key(p) + "_" + n + "_ms"] = v;
}

}  // namespace

json make_result_json(const RunResult& run, const json& config, bool include_texts) {
  json j = config.is_object() ? config : json::object();
  const BenchmarkMetrics& m = run.metrics;
  j["duration"] = m.duration_s;
  j["completed"] = m.num_completed;
  j["failed"] = m.num_failed;
  j["total_input_tokens"] = m.total_input_tokens;
  j["total_output_tokens"] = m.total_output_tokens;
  j["request_throughput"] = m.request_throughput;
  j["request_goodput"] = m.request_goodput ? json(*m.request_goodput) : json(nullptr);
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  j["max_concurrent_requests"] = m.max_concurrent_requests;
  add_stats(&j, "ttft", m.ttft);
  add_stats(&j, "tpot", m.tpot);
  add_stats(&j, "itl", m.itl);
  add_stats(&j, "e2el", m.e2el);
  json input_lens = json::array(), output_lens = json::array(), ttfts = json::array(),
       itls = json::array(), e2els = json::array(), errors = json::array(), texts = json::array();
  for (const RequestOutcome& o : run.outcomes) {
    input_lens.push_back(o.num_prompt_tokens);
    output_lens.push_back(o.num_output_tokens);
    ttfts.push_back(o.ttft_s);
    itls.push_back(o.itls_s);
    e2els.push_back(o.e2e_s);
    errors.push_back(o.error);
    if (include_texts) texts.push_back(o.generated_text);
  }
  j["input_lens"] = std::move(input_lens);
  j["output_lens"] = std::move(output_lens);
  j["ttfts"] = std::move(ttfts);
  j["itls"] = std::move(itls);
  j["e2els"] = std::move(e2els);
  j["errors"] = std::move(errors);
  if (include_texts) j["generated_texts"] = std::move(texts);
  return j;
}

Status write_json_file(const std::string& path, const json& j) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return io_error("cannot write " + path);
  out << j.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
  out.close();
  if (!out) return io_error("write error on " + path);
  return Status::ok();
}

}  // namespace strata::loadgen
