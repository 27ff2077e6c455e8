// The --save-result JSON of `strata bench serve`, with vLLM's field names so
// existing tooling reads it: completed, failed, duration, request_throughput,
// request_goodput, output_throughput, total_token_throughput,
// total_input_tokens, total_output_tokens, {mean,median,std,pNN}_{ttft,tpot,
// itl,e2el}_ms, and per request (dataset order) input_lens, output_lens,
// ttfts (s), itls (s, a list per request), e2els (s), errors ("" = success),
// generated_texts (when kept). The caller's config object (date, base_url,
// model_id, dataset_name, ...) is merged in first. Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "loadgen/benchmark_metrics.h"
#include "loadgen/benchmark_runner.h"

namespace strata::loadgen {

// "99" for 99.0, "99.9" for 99.9: the pNN part of vLLM's keys.
std::string percentile_key(double p);

nlohmann::json make_result_json(const RunResult& run, const nlohmann::json& config,
                                bool include_texts);

// Writes `j` (pretty, 2 spaces) to path; an io_error on failure.
Status write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace strata::loadgen
