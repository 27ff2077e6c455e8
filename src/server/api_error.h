// ApiError: an OpenAI-style error response, {"error": {"message", "type",
// "param", "code"}} with its HTTP status. A plain value. Messages are fixed
// strings written here: they never echo parser output, keys or user text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

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

}  // namespace strata::server
