#include "http/router.h"

#include <cassert>

namespace strata::http {

void Router::add(std::string method, std::string path, Handler handler, RunOn run_on) {
  assert(!path.empty() && path.front() == '/');
  routes_.push_back(Route{std::move(method), std::move(path), false, std::move(handler), run_on});
}

void Router::add_prefix(std::string method, std::string prefix, Handler handler, RunOn run_on) {
  assert(!prefix.empty() && prefix.front() == '/');
  routes_.push_back(Route{std::move(method), std::move(prefix), true, std::move(handler), run_on});
}

bool Router::has_worker_routes() const {
  for (const Route& r : routes_) {
    if (r.run_on == RunOn::kWorker) return true;
  }
  return false;
}

Router::Match Router::find(std::string_view method, std::string_view path) const {
  // The routes that own this path: the exact ones, else the longest prefix.
  bool is_exact = false;
  size_t prefix_len = 0;
  for (const Route& r : routes_) {
    if (!r.is_prefix && r.path == path) is_exact = true;
    if (r.is_prefix && path.size() > r.path.size() && path.substr(0, r.path.size()) == r.path &&
        r.path.size() > prefix_len) {
      prefix_len = r.path.size();
    }
  }
  if (!is_exact && prefix_len == 0) return Match{};
  auto owns = [&](const Route& r) {
    return is_exact
               ? !r.is_prefix && r.path == path
               : r.is_prefix && r.path.size() == prefix_len && path.substr(0, prefix_len) == r.path;
  };
  const Route* found = nullptr;
  const Route* get = nullptr;
  Match m;
  for (const Route& r : routes_) {
    if (!owns(r)) continue;
    if (r.method == method) found = &r;
    if (r.method == "GET") get = &r;
    if (!m.allow.empty()) m.allow += ", ";
    m.allow += r.method;
  }
  if (found == nullptr && method == "HEAD") found = get;
  if (get != nullptr && m.allow.find("HEAD") == std::string::npos) m.allow += ", HEAD";
  if (found == nullptr) {
    m.outcome = Outcome::kMethodNotAllowed;
    return m;
  }
  if (!is_exact) {
    std::optional<std::string> param = percent_decode(path.substr(prefix_len));
    if (!param || param->empty()) return Match{};
    m.path_param = std::move(*param);
  }
  m.outcome = Outcome::kFound;
  m.handler = &found->handler;
  m.run_on = found->run_on;
  m.allow.clear();
  return m;
}

}  // namespace strata::http
