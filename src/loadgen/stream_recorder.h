// StreamRecorder: turns one streamed OpenAI response (completions or chat)
// into a RequestOutcome, token by token as the bytes arrive.
//
// Definitions (docs/bench_serve.md):
//  - a content chunk is an SSE event whose choices[0] carries a non-empty
//    "text" (completions) or "delta.content" (chat); role-only, empty and
//    finish-only chunks and the usage chunk are not tokens;
//  - TTFT = first content chunk's arrival - send time;
//  - ITL = every gap between consecutive content chunks;
//  - E2E = end of stream - send time;
//  - token counts = the usage chunk's prompt_tokens / completion_tokens when
//    present, else the dataset's prompt length and the content-chunk count.
//  - If usage reports N output tokens but only M < N content chunks came
//    (a server merged tokens into chunks), the M-1 gaps are spread over N-1
//    ITL samples: gap i is split into c_i equal parts, c_i integers summing
//    to N-1 as evenly as possible (earlier gaps take the remainder), so ITLs
//    still sum to E2E - TTFT and there is one per token after the first.
//  - If usage reports output tokens but no chunk had text (a server may hold
//    back bytes that are not valid UTF-8 yet), TTFT is the arrival of the
//    first chunk carrying a choice, and there are no ITL samples.
//
// Failures: a transport error, a non-200 status (the body's error message
// is kept), an "error" object in the stream, a body that is not SSE JSON, a
// stream that ends without "data: [DONE]", or no output token at all.
// Not thread-safe: one recorder per request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loadgen/request_outcome.h"
#include "loadgen/sse_parser.h"

namespace strata::loadgen {

class StreamRecorder {
 public:
  // start_s: send time (benchmark clock); dataset_prompt_tokens: -1 unknown.
  StreamRecorder(double start_s, int64_t dataset_prompt_tokens, bool keep_text);

  // Call with the HTTP status before the body (200 = stream expected).
  void on_status(int http_status) { http_status_ = http_status; }
  // Body bytes that arrived at now_s. Returns false once the stream is known
  // bad (the caller may stop reading).
  bool on_bytes(std::string_view bytes, double now_s);
  // The stream ended at now_s; transport_error is empty on a clean end.
  RequestOutcome finish(double now_s, const std::string& transport_error);

 private:
  void on_event(const std::string& data, double now_s);
  void fail(std::string message);

  SseParser parser_;
  RequestOutcome out_;
  bool keep_text_;
  int http_status_ = 0;
  std::string error_body_;  // body of a non-200 response
  bool saw_done_ = false;
  bool has_failed_ = false;
  double last_chunk_s_ = 0.0;
  double first_choice_s_ = -1.0;  // arrival of the first chunk with a choice
};

// Splits gaps into `num_samples` ITL samples as described above; returns
// the gaps unchanged when num_samples <= gaps.size(). Exposed for tests.
std::vector<double> spread_itls(const std::vector<double>& gaps_s, int64_t num_samples);

}  // namespace strata::loadgen
