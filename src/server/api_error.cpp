#include "server/api_error.h"

#include <utility>

namespace strata::server {

nlohmann::json ApiError::to_json() const {
  nlohmann::json e;
  e["message"] = message;
  e["type"] = type;
  e["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  e["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  return nlohmann::json{{"error", std::move(e)}};
}

std::string ApiError::body() const {
  return to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {
ApiError make(int status, std::string message, std::string type, std::string code) {
  ApiError e;
  e.http_status = status;
  e.message = std::move(message);
  e.type = std::move(type);
  e.code = std::move(code);
  return e;
}
}  // namespace

ApiError invalid_param(std::string param, std::string message) {
  ApiError e = make(400, std::move(message), "invalid_request_error", "invalid_value");
  e.param = std::move(param);
  return e;
}

ApiError context_length_exceeded(std::string param, std::string message) {
  ApiError e = make(400, std::move(message), "invalid_request_error", "context_length_exceeded");
  e.param = std::move(param);
  return e;
}

ApiError unauthorized() {
  return make(401, "Incorrect or missing API key.", "authentication_error", "invalid_api_key");
}
ApiError model_not_found() {
  ApiError e = make(404, "The model does not exist.", "invalid_request_error", "model_not_found");
  e.param = "model";
  return e;
}
ApiError route_not_found() {
  return make(404, "Unknown route.", "invalid_request_error", "not_found");
}
ApiError method_not_allowed() {
  return make(405, "Method not allowed for this route.", "invalid_request_error",
              "method_not_allowed");
}
ApiError body_too_large() {
  return make(413, "Request body too large.", "invalid_request_error", "request_too_large");
}
ApiError headers_too_large() {
  return make(431, "Request header fields too large or malformed.", "invalid_request_error",
              "headers_too_large");
}
ApiError queue_full() {
  return make(429, "The server's request queue is full; retry later.", "rate_limit_error",
              "queue_full");
}
ApiError server_draining() {
  return make(503, "The server is shutting down.", "server_error", "draining");
}
ApiError internal_error(std::string message) {
  return make(500, std::move(message), "server_error", "internal_error");
}

ApiError engine_error(StatusCode code, std::string message) {
  switch (code) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      if (message.find("--max-model-len") != std::string::npos) {
        return context_length_exceeded("", std::move(message));
      }
      return invalid_param("", std::move(message));
    case StatusCode::kResourceExhausted:
      return make(503, std::move(message), "server_error", "service_unavailable");
    default:
      return internal_error(std::move(message));
  }
}

ApiError transport_error(int status, std::string_view message) {
  std::string m(message);
  switch (status) {
    case 404:
      return route_not_found();
    case 405:
      return make(405, std::move(m), "invalid_request_error", "method_not_allowed");
    case 408:
      return make(408, std::move(m), "invalid_request_error", "request_timeout");
    case 413:
      return make(413, std::move(m), "invalid_request_error", "request_too_large");
    case 431:
      return make(431, std::move(m), "invalid_request_error", "headers_too_large");
    case 503:
      return make(503, std::move(m), "server_error", "service_unavailable");
    default:
      if (status >= 500) return make(status, std::move(m), "server_error", "internal_error");
      return make(status, std::move(m), "invalid_request_error", "bad_request");
  }
}

}  // namespace strata::server
