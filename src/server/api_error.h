// ApiError: an OpenAI-style error response, {"error": {"message", "type",
// "param", "code"}} with its HTTP status. A plain value. Messages are fixed
// strings written here or strata's own engine messages (which name the knob
// to change); they never echo parser output, keys or user text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "util/status.h"

namespace strata::server {

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // empty -> null
  std::string code;   // empty -> null

  nlohmann::json to_json() const;
  std::string body() const;  // to_json() serialized
};

// 400 invalid_request_error naming `param`.
ApiError invalid_param(std::string param, std::string message);
// 400 with code context_length_exceeded.
ApiError context_length_exceeded(std::string param, std::string message);
ApiError unauthorized();                       // 401
ApiError model_not_found();                    // 404
ApiError route_not_found();                    // 404
ApiError method_not_allowed();                 // 405
ApiError body_too_large();                     // 413
ApiError headers_too_large();                  // 431
ApiError queue_full();                         // 429
ApiError server_draining();                    // 503
ApiError internal_error(std::string message);  // 500, for server faults only
// What the engine said about a request: kInvalidArgument / kOutOfRange ->
// 400 (context_length_exceeded when --max-model-len is the reason),
// kResourceExhausted -> 503 (shutting down), anything else -> 500, with the
// engine's message.
ApiError engine_error(StatusCode code, std::string message);
// What the HTTP transport answered by itself (a malformed head, a body over
// the limit, an unknown route, a timeout, max connections), as an OpenAI
// error body with the transport's status and one-line message.
ApiError transport_error(int status, std::string_view message);

}  // namespace strata::server
