// OpenAiClient: the HTTP side of `strata bench serve` for one worker: a
// keep-alive cpp-httplib connection to an OpenAI-compatible server, sending
// streamed generation requests and feeding the body to a StreamRecorder as
// it arrives (so chunk times are arrival times), plus the start-up queries
// (first model id, vocabulary size).
// Not thread-safe: one client per worker thread. Network and server errors
// come back as Status or as a failed RequestOutcome, never as exceptions.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "loadgen/request_outcome.h"
#include "util/status.h"

namespace httplib {
class Client;
}

namespace strata::loadgen {

struct ClientOptions {
  std::string base_url = "http://127.0.0.1:8080";  // scheme://host[:port][/prefix]
  std::string api_key;                             // empty = no Authorization header
  double connect_timeout_s = 10.0;
  double read_timeout_s = 600.0;  // longest silence inside a stream
};

using BenchClock = std::chrono::steady_clock;

class OpenAiClient {
 public:
  // Fails on a malformed base URL.
  static Result<std::unique_ptr<OpenAiClient>> create(const ClientOptions& opt);
  ~OpenAiClient();

  // POSTs body to endpoint (a path such as /v1/completions) and records the
  // SSE stream. Times are seconds since t0; the send time is taken just
  // before the request is written.
  RequestOutcome stream(const std::string& endpoint, const nlohmann::json& body,
                        int64_t dataset_prompt_tokens, bool keep_text, BenchClock::time_point t0);

  // GET /v1/models: the parsed body.
  Result<nlohmann::json> get_models();

  // Sends a one-token completion whose prompt is [token_id]: true if the
  // server answers 200, false on a 4xx/5xx, a Status on a transport error.
  Result<bool> accepts_token_id(const std::string& endpoint, const std::string& model,
                                int32_t token_id);

 private:
  OpenAiClient(std::unique_ptr<httplib::Client> http, std::string path_prefix, std::string api_key);
  std::string path(const std::string& endpoint) const;

  std::unique_ptr<httplib::Client> http_;
  std::string path_prefix_;  // base URL path, without a trailing '/'
  std::string api_key_;
};

// The first model id of a /v1/models body, or an error naming --model.
Result<std::string> first_model_id(const nlohmann::json& models);
// A vocabulary size advertised by /v1/models: data[0].meta.n_vocab
// (llama-server) or data[0].vocab_size; 0 if none.
int32_t advertised_vocab_size(const nlohmann::json& models);
// The vocabulary size found by probing accepts_token_id (doubling, then
// bisection): the smallest id the server rejects. ~2*log2(vocab) requests.
Result<int32_t> probe_vocab_size(OpenAiClient* client, const std::string& model);

}  // namespace strata::loadgen
