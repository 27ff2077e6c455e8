// Router: maps a request's method and path to its handler.
//
// Routes are exact paths ("/v1/completions") or prefixes whose remainder
// becomes HttpRequest::path_param ("/v1/models/" + "{id}", percent-decoded,
// non-empty). An exact route wins over a prefix; among prefixes the longest
// wins. A path with no route is kNotFound; a path whose routes take other
// methods is kMethodNotAllowed, with the Allow list. HEAD falls back to the
// GET route of the same path (the server sends the headers only).
//
// Built before the server starts, then read-only: find() is safe from any
// number of threads once no add() runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/http_request.h"

namespace strata::http {

class HttpResponse;
using ResponsePtr = std::shared_ptr<HttpResponse>;

// Runs on an I/O thread and must not block: a handler that waits (for the
// engine, a file, another service) returns at once and completes `response`
// later from any thread. The request is the handler's to keep or move.
using Handler = std::function<void(HttpRequest request, ResponsePtr response)>;

class Router {
 public:
  enum class Outcome { kFound, kNotFound, kMethodNotAllowed };
  struct Match {
    Outcome outcome = Outcome::kNotFound;
    const Handler* handler = nullptr;  // when kFound; owned by the Router
    std::string path_param;            // decoded remainder of a prefix route
    std::string allow;                 // when kMethodNotAllowed: "GET, HEAD"
  };

  // `method` is case-sensitive ("GET"); `path` starts with '/'.
  void add(std::string method, std::string path, Handler handler);
  // Matches every path that starts with `prefix` and has a non-empty rest.
  void add_prefix(std::string method, std::string prefix, Handler handler);

  Match find(std::string_view method, std::string_view path) const;

 private:
  struct Route {
    std::string method;
    std::string path;  // exact path or prefix
    bool is_prefix = false;
    Handler handler;
  };
  std::vector<Route> routes_;
};

}  // namespace strata::http
