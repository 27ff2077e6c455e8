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

// The request is the handler's to keep or move; `response` may be answered
// now or later, from any thread.
using Handler = std::function<void(HttpRequest request, ResponsePtr response)>;

// Where a route's handler runs.
enum class RunOn {
  // The connection's I/O thread: the handler must not block (it stalls
  // every connection of that thread). One that waits for the engine or
  // another service returns at once and answers later from elsewhere.
  kIoThread,
  // One of the server's worker threads (HttpServerOptions::
  // num_worker_threads): for handlers that compute or block for a while
  // (tokenizing a 1 MB body). The client's disconnect is still seen.
  kWorker,
};

class Router {
 public:
  enum class Outcome { kFound, kNotFound, kMethodNotAllowed };
  struct Match {
    Outcome outcome = Outcome::kNotFound;
    const Handler* handler = nullptr;  // when kFound; owned by the Router
    RunOn run_on = RunOn::kIoThread;
    std::string path_param;  // decoded remainder of a prefix route
    std::string allow;       // when kMethodNotAllowed: "GET, HEAD"
  };

  // `method` is case-sensitive ("GET"); `path` starts with '/'.
  void add(std::string method, std::string path, Handler handler, RunOn run_on = RunOn::kIoThread);
  // Matches every path that starts with `prefix` and has a non-empty rest.
  void add_prefix(std::string method, std::string prefix, Handler handler,
                  RunOn run_on = RunOn::kIoThread);

  Match find(std::string_view method, std::string_view path) const;
  bool has_worker_routes() const;

 private:
  struct Route {
    std::string method;
    std::string path;  // exact path or prefix
    bool is_prefix = false;
    Handler handler;
    RunOn run_on = RunOn::kIoThread;
  };
  std::vector<Route> routes_;
};

}  // namespace strata::http
