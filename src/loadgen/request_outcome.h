// RequestOutcome: what one benchmark request measured, in seconds. Filled by
// StreamRecorder from the server's SSE stream; aggregated by
// aggregate_metrics(). A plain value; no invariants beyond the field notes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::loadgen {

struct RequestOutcome {
  bool is_success = false;
  std::string error;  // first error message when !is_success

  double start_s = 0.0;  // when it was sent, seconds from the benchmark start
  double ttft_s = 0.0;   // send -> first content chunk
  double e2e_s = 0.0;    // send -> end of the stream
  // Every gap between consecutive content chunks (see StreamRecorder for
  // chunks that carry several tokens).
  std::vector<double> itls_s;

  // From the server's usage when it sent one; else the dataset's prompt
  // length (-1 = unknown) and the number of content chunks.
  int64_t num_prompt_tokens = -1;
  int64_t num_output_tokens = 0;
  int64_t num_content_chunks = 0;
  bool has_usage = false;
  std::string generated_text;

  // Time per output token after the first: (e2e - ttft) / (output - 1); 0
  // with fewer than two output tokens.
  double tpot_s() const {
    return num_output_tokens > 1 ? (e2e_s - ttft_s) / static_cast<double>(num_output_tokens - 1)
                                 : 0.0;
  }
};

}  // namespace strata::loadgen
