// Request bodies of `strata bench serve`: the JSON sent to
// /v1/completions (a BenchRequest) or /v1/chat/completions (a chat history).
// Always streamed with usage (stream_options.include_usage), EOS ignored by
// default so outputs have the requested length; extra_body's fields are
// merged last (they override). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/dataset.h"

namespace strata::loadgen {

struct BodyOptions {
  std::string model;  // empty = no "model" field
  double temperature = 0.0;
  bool ignore_eos = true;
  nlohmann::json extra_body = nlohmann::json::object();
};

struct ChatTurn {
  std::string role;  // "user" or "assistant"
  std::string content;
};

nlohmann::json make_completion_body(const BenchRequest& req, const BodyOptions& opt);
nlohmann::json make_chat_body(const std::vector<ChatTurn>& history, int32_t max_tokens,
                              const BodyOptions& opt);

// True when the endpoint path is a chat endpoint (ends in chat/completions).
bool is_chat_endpoint(const std::string& endpoint);

}  // namespace strata::loadgen
