// HttpError: why the transport answered a request itself (malformed head,
// body over the limit, unknown route, timeout, refusal), as the status it
// sends and a fixed one-line message.
//
// A plain value. `message` always points at a string literal written in
// src/http: it never echoes request bytes, so a formatter may put it in a
// body as is.
#pragma once

#include <string_view>

namespace strata::http {

struct HttpError {
  int status = 400;
  std::string_view message;
};

}  // namespace strata::http
