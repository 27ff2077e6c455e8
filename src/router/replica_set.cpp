#include "router/replica_set.h"

#include <charconv>
#include <cstdio>

namespace strata::router {

Result<ReplicaEndpoint> parse_replica_url(std::string_view url) {
  std::string_view rest = url;
  if (rest.substr(0, 7) == "http://") {
    rest.remove_prefix(7);
  } else if (rest.find("://") != std::string_view::npos) {
    return invalid_argument("router: replica '" + std::string(url) +
                            "': only http:// replicas are supported");
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find('/') != std::string_view::npos) {
    return invalid_argument("router: replica '" + std::string(url) +
                            "' must be http://host[:port] with no path");
  }
  ReplicaEndpoint e;
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) {
    e.host = std::string(rest);
    e.port = 80;
  } else {
    e.host = std::string(rest.substr(0, colon));
    const std::string_view port = rest.substr(colon + 1);
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return invalid_argument("router: replica '" + std::string(url) + "': bad port");
    }
    e.port = static_cast<uint16_t>(value);
  }
  if (e.host.empty())
    return invalid_argument("router: replica '" + std::string(url) + "': no host");
  e.url = "http://" + e.host + ":" + std::to_string(e.port);
  return e;
}

bool Replica::is_available() {
  std::lock_guard<std::mutex> lock(mu_);
  return breaker_.allows_request();
}

void Replica::record_success() {
  std::lock_guard<std::mutex> lock(mu_);
  if (breaker_.record_success()) {
    std::fprintf(stderr, "[router] replica %s is back: re-admitted\n", url().c_str());
  }
}

void Replica::record_failure(std::string_view why) {
  num_failures.fetch_add(1);
  std::lock_guard<std::mutex> lock(mu_);
  if (breaker_.record_failure()) {
    std::fprintf(stderr, "[router] replica %s ejected (%.*s)\n", url().c_str(),
                 static_cast<int>(why.size()), why.data());
  }
}

CircuitBreaker::State Replica::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return breaker_.state();
}

int64_t Replica::num_ejections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return breaker_.num_ejections();
}

Result<ReplicaSet::Change> ReplicaSet::update(const std::vector<std::string>& urls) {
  std::vector<ReplicaEndpoint> endpoints;
  for (const std::string& u : urls) {
    STRATA_ASSIGN_OR_RETURN(ReplicaEndpoint e, parse_replica_url(u));
    bool dup = false;
    for (const ReplicaEndpoint& x : endpoints) dup = dup || x.url == e.url;
    if (!dup) endpoints.push_back(std::move(e));
  }
  Change change;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<Replica>> next;
  for (ReplicaEndpoint& e : endpoints) {
    std::shared_ptr<Replica> kept;
    for (const auto& r : replicas_) {
      if (r->url() == e.url) kept = r;
    }
    if (kept == nullptr) {
      change.added.push_back(e.url);
      kept = std::make_shared<Replica>(std::move(e), breaker_, clock_);
    }
    next.push_back(std::move(kept));
  }
  for (const auto& r : replicas_) {
    bool stays = false;
    for (const auto& n : next) stays = stays || n == r;
    if (!stays) {
      r->set_draining();
      change.removed.push_back(r->url());
    }
  }
  replicas_ = std::move(next);
  return change;
}

std::vector<std::shared_ptr<Replica>> ReplicaSet::replicas() const {
  std::lock_guard<std::mutex> lock(mu_);
  return replicas_;
}

std::vector<std::string> ReplicaSet::urls() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& r : replicas_) out.push_back(r->url());
  return out;
}

}  // namespace strata::router
