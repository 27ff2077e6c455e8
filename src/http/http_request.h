// HttpRequest: one parsed HTTP/1.x request as the server hands it to a
// handler, and HttpReply: a complete response a hook or formatter returns.
//
// Plain values, owned by whoever holds them. The server fills an
// HttpRequest only from a head that passed RequestHeadParser's checks, so
// every header name is a token and no value holds a control byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::http {

struct Header {
  std::string name;   // as sent (case preserved); compare with iequals()
  std::string value;  // leading and trailing whitespace removed
};
using HeaderList = std::vector<Header>;

// ASCII case-insensitive equality (header names, tokens).
bool iequals(std::string_view a, std::string_view b);
// The value of the first header named `name` (case-insensitive), if any.
std::optional<std::string_view> find_header(const HeaderList& headers, std::string_view name);

struct HttpRequest {
  std::string method;  // "GET", "POST", ... (case-sensitive, as RFC 9110 says)
  std::string target;  // the request-target as sent ("/v1/models?x=1", "http://h/v1")
  std::string path;    // target's path, undecoded ("/v1/models"); "/" for absolute-form "http://h"
  std::string query;   // after '?', without it; empty when absent
  int version_minor = 1;  // HTTP/1.<version_minor>: 0 or 1
  HeaderList headers;
  std::string body;  // de-chunked; at most HttpServerOptions::max_body_bytes
  // Whether the connection stays open after the response (1.1 default,
  // 1.0 with "Connection: keep-alive"; false with "Connection: close").
  bool keep_alive = true;
  // The rest of the path after a prefix route's prefix ("/v1/models/{id}"),
  // percent-decoded; empty for exact routes.
  std::string path_param;
  // Peer address ("127.0.0.1", "::1") and port, for logs.
  std::string remote_address;
  uint16_t remote_port = 0;

  std::optional<std::string_view> header(std::string_view name) const {
    return find_header(headers, name);
  }
};

// A complete response: what an auth hook or an error formatter returns.
struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  HeaderList headers;  // extra headers (no Content-Length, Transfer-Encoding or Connection)
};

// Decodes %XX escapes; nullopt on a malformed escape or an encoded NUL.
std::optional<std::string> percent_decode(std::string_view s);

}  // namespace strata::http
