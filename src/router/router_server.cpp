#include "router/router_server.h"

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "http/http_client.h"
#include "http/http_server.h"
#include "kv/block_hash.h"
#include "router/proxy_call.h"
#include "router/replica_set.h"
#include "sched/clock.h"
#include "server/api_error.h"
#include "server/chat_template.h"
#include "server/probe_route.h"
#include "server/prompt_builder.h"

namespace strata::router {
namespace {

using nlohmann::json;
using SteadyTime = std::chrono::steady_clock;

http::HttpReply api_error_reply(const server::ApiError& e) {
  return http::HttpReply{e.http_status, "application/json", e.body(), {}};
}

server::ApiError no_replica() {
  server::ApiError e;
  e.http_status = 503;
  e.type = "service_unavailable";
  e.message = "No replica is available (all are ejected or draining); retry shortly.";
  return e;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

std::string trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return std::string(s);
}

}  // namespace

Result<std::vector<std::string>> read_replicas_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return Status(StatusCode::kIoError, "router: cannot read --replicas-file '" + path + "'");
  }
  std::vector<std::string> urls;
  std::string line;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    STRATA_RETURN_IF_ERROR(parse_replica_url(t).status());
    urls.push_back(std::move(t));
  }
  return urls;
}

class RouterServer::Impl {
 public:
  Impl(const Tokenizer& tokenizer, RouterOptions options)
      : tokenizer_(tokenizer),
        options_(std::move(options)),
        chat_template_(server::chat_template_or_model(options_.chat_template, tokenizer)),
        builder_(tokenizer_, *chat_template_),
        replicas_(options_.breaker, &clock_),
        policy_(options_.policy, options_.cost),
        upstream_(upstream_options()),
        control_(control_options()),
        probe_client_(probe_options()) {
    // The replicas enforce their own limits (their --max-n and so on): the
    // router only refuses what no replica could take.
    server::ProtocolLimits& l = options_.limits;
    l.vocab_size = tokenizer.vocab_size();
    if (l.max_model_len <= 0) l.max_model_len = int64_t{1} << 40;
    l.max_n = std::max(l.max_n, 1 << 16);
    l.max_stop = std::max(l.max_stop, 1 << 10);
    l.max_stop_bytes = std::max(l.max_stop_bytes, size_t{1} << 16);
    l.max_top_logprobs = std::max(l.max_top_logprobs, 1 << 10);
    l.max_logit_bias = std::max(l.max_logit_bias, 1 << 20);
  }

  ~Impl() { stop(); }

  Status init() {
    STRATA_RETURN_IF_ERROR(set_replicas(options_.replicas));
    http::HttpServerOptions so;
    so.host = options_.host;
    so.port = options_.port;
    so.num_io_threads = options_.num_io_threads;
    so.num_worker_threads = options_.num_worker_threads;
    so.max_body_bytes = options_.max_body_bytes;
    so.head_hook = [this](const http::HttpRequest& r) { return check_auth(r); };
    so.error_formatter = [](const http::HttpError& e) {
      server::ApiError a;
      a.http_status = e.status;
      a.message = e.message;
      a.type = e.status >= 500 ? "server_error" : "invalid_request_error";
      return api_error_reply(a);
    };
    server_ = std::make_unique<http::HttpServer>(std::move(so), routes());
    return server_->bind();
  }

  Status start() {
    STRATA_RETURN_IF_ERROR(server_->start());
    if (options_.health_interval.count() > 0)
      health_thread_ = std::thread([this] { health_loop(); });
    return Status::ok();
  }

  uint16_t port() const { return server_->port(); }

  Status set_replicas(const std::vector<std::string>& urls) {
    STRATA_ASSIGN_OR_RETURN(ReplicaSet::Change change, replicas_.update(urls));
    {
      std::lock_guard<std::mutex> lock(policy_mu_);
      policy_.set_members(replicas_.urls());
    }
    for (const std::string& u : change.added) {
      std::fprintf(stderr, "[router] replica %s added\n", u.c_str());
    }
    for (const std::string& u : change.removed) {
      std::fprintf(stderr, "[router] replica %s removed (draining its requests)\n", u.c_str());
    }
    return Status::ok();
  }

  std::vector<std::string> replica_urls() const { return replicas_.urls(); }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      if (is_stopped_) return;
      is_stopped_ = true;
    }
    stop_cv_.notify_all();
    if (health_thread_.joinable()) health_thread_.join();
    if (server_) {
      server_->stop_accepting();
      server_->stop();
    }
  }

  const RouterMetrics& metrics() const { return metrics_; }
  std::string metrics_text() const { return metrics_.to_prometheus_text(replicas_.replicas()); }

 private:
  http::HttpClientOptions upstream_options() const {
    http::HttpClientOptions o;
    o.connect_timeout = options_.connect_timeout;
    return o;
  }
  // Health checks and probes: one bound on every phase of the call.
  static http::HttpClientOptions bounded_options(std::chrono::milliseconds timeout) {
    http::HttpClientOptions o;
    o.connect_timeout = timeout;
    o.response_timeout = timeout;
    o.read_timeout = timeout;
    return o;
  }
  http::HttpClientOptions control_options() const {
    return bounded_options(options_.health_timeout);
  }
  http::HttpClientOptions probe_options() const { return bounded_options(options_.probe_timeout); }

  std::optional<http::HttpReply> check_auth(const http::HttpRequest& r) const {
    if (options_.api_key.empty() || r.path == "/health") return std::nullopt;
    const std::string_view auth = r.header("authorization").value_or("");
    const std::string_view prefix = "Bearer ";
    const bool ok = auth.size() > prefix.size() && auth.substr(0, prefix.size()) == prefix &&
                    constant_time_equal(auth.substr(prefix.size()), options_.api_key);
    if (ok) return std::nullopt;
    return api_error_reply(server::unauthorized());
  }

  http::Router routes() {
    http::Router r;
    r.add("GET", "/health", [this](http::HttpRequest, http::ResponsePtr res) { health(res); });
    r.add("GET", "/metrics", [this](http::HttpRequest, http::ResponsePtr res) {
      res->send(200, "text/plain; version=0.0.4", metrics_text());
    });
    r.add(
        "GET", "/v1/models",
        [this](http::HttpRequest, http::ResponsePtr res) { models(res, std::nullopt); },
        http::RunOn::kWorker);
    r.add_prefix(
        "GET", "/v1/models/",
        [this](http::HttpRequest req, http::ResponsePtr res) { models(res, req.path_param); },
        http::RunOn::kWorker);
    r.add(
        "POST", "/v1/completions",
        [this](http::HttpRequest req, http::ResponsePtr res) {
          generation(std::move(req), std::move(res), /*is_chat=*/false);
        },
        http::RunOn::kWorker);
    r.add(
        "POST", "/v1/chat/completions",
        [this](http::HttpRequest req, http::ResponsePtr res) {
          generation(std::move(req), std::move(res), /*is_chat=*/true);
        },
        http::RunOn::kWorker);
    for (const char* path : {"/tokenize", "/detokenize"}) {
      r.add("POST", path, [this](http::HttpRequest req, http::ResponsePtr res) {
        forward_anywhere(std::move(req), std::move(res));
      });
    }
    return r;
  }

  void health(const http::ResponsePtr& res) {
    int64_t available = 0;
    const auto all = replicas_.replicas();
    for (const auto& r : all) available += r->state() != CircuitBreaker::State::kOpen ? 1 : 0;
    const json body{{"status", available > 0 ? "ok" : "no replica available"},
                    {"replicas", all.size()},
                    {"replicas_available", available}};
    res->send(available > 0 ? 200 : 503, "application/json", body.dump());
  }

  // Replicas a request may go to now.
  std::vector<std::shared_ptr<Replica>> candidates() {
    std::vector<std::shared_ptr<Replica>> out;
    for (auto& r : replicas_.replicas()) {
      if (!r->is_draining() && r->is_available()) out.push_back(std::move(r));
    }
    return out;
  }

  http::HeaderList upstream_headers(const http::HttpRequest& req) const {
    http::HeaderList h;
    h.push_back({"Content-Type", "application/json"});
    if (!options_.replica_api_key.empty()) {
      h.push_back({"Authorization", "Bearer " + options_.replica_api_key});
    } else if (options_.api_key.empty()) {
      if (auto a = req.header("authorization")) h.push_back({"Authorization", std::string(*a)});
    }
    for (const char* name : {"x-session-id", "x-request-id"}) {
      if (auto v = req.header(name)) h.push_back({name, std::string(*v)});
    }
    return h;
  }

  void forward_anywhere(http::HttpRequest req, http::ResponsePtr res) {
    std::vector<std::shared_ptr<Replica>> c = candidates();
    if (c.empty()) {
      res->send(api_error_reply(no_replica()));
      return;
    }
    std::stable_sort(c.begin(), c.end(), [](const auto& a, const auto& b) {
      return a->num_in_flight.load() < b->num_in_flight.load();
    });
    std::vector<ProxyTarget> order;
    for (auto& r : c) order.push_back({std::move(r), std::nullopt});
    ProxyRequest pr;
    pr.method = req.method;
    pr.target = req.target;
    pr.headers = upstream_headers(req);
    pr.body = std::move(req.body);
    ProxyCall::start(&upstream_, std::move(pr), std::move(order),
                     ProxyOptions{1 + options_.max_retries}, std::move(res), &metrics_);
  }

  // GET /v1/models (id empty) or /v1/models/{id}: the union of the
  // available replicas' lists, first card of each id.
  void models(const http::ResponsePtr& res, const std::optional<std::string>& id) {
    std::vector<std::shared_ptr<Replica>> c = candidates();
    std::vector<std::future<http::ClientResult>> answers;
    for (const auto& r : c) {
      http::ClientRequest cr;
      cr.host = r->endpoint().host;
      cr.port = r->endpoint().port;
      cr.target = "/v1/models";
      if (!options_.replica_api_key.empty()) {
        cr.headers.push_back({"Authorization", "Bearer " + options_.replica_api_key});
      }
      answers.push_back(control_.fetch(std::move(cr)));
    }
    json data = json::array();
    std::vector<std::string> seen;
    for (auto& f : answers) {
      http::ClientResult result = f.get();
      if (!result.outcome.ok() || result.response.head.status != 200) continue;
      const json j = json::parse(result.response.body, nullptr, false);
      if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) continue;
      for (const json& card : j["data"]) {
        if (!card.is_object() || !card.contains("id") || !card["id"].is_string()) continue;
        const std::string name = card["id"].get<std::string>();
        if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
        seen.push_back(name);
        data.push_back(card);
      }
    }
    if (id) {
      for (const json& card : data) {
        if (card["id"] == *id) {
          res->send(200, "application/json", card.dump());
          return;
        }
      }
      res->send(api_error_reply(server::model_not_found()));
      return;
    }
    if (c.empty()) {
      res->send(api_error_reply(no_replica()));
      return;
    }
    res->send(200, "application/json", json{{"object", "list"}, {"data", data}}.dump());
  }

  // The replica a session's last request went to: a probe hint only (the
  // probe, not this, decides), bounded and forgotten wholesale when full.
  std::string last_replica_of(const std::string& session_key) {
    if (session_key.empty() || options_.max_probe_candidates == 0) return "";
    std::lock_guard<std::mutex> lock(session_mu_);
    auto it = last_replica_.find(session_key);
    return it == last_replica_.end() ? "" : it->second;
  }
  void remember_replica_of(const std::string& session_key, const std::string& url) {
    if (session_key.empty() || options_.max_probe_candidates == 0) return;
    std::lock_guard<std::mutex> lock(session_mu_);
    if (last_replica_.size() >= kMaxRememberedSessions) last_replica_.clear();
    last_replica_[session_key] = url;
  }

  int32_t block_size_of(const std::string& url) {
    std::lock_guard<std::mutex> lock(block_size_mu_);
    auto it = block_sizes_.find(url);
    return it == block_sizes_.end() ? options_.block_size : it->second;
  }
  void learn_block_size(const std::string& url, int32_t block_size) {
    std::lock_guard<std::mutex> lock(block_size_mu_);
    block_sizes_[url] = block_size;
  }

  bool needs_probes(const std::string& session_key) const {
    switch (options_.policy) {
      case Policy::kCacheAware:
      case Policy::kLeastLoad:
        return true;
      case Policy::kRoundRobin:
        return false;
      case Policy::kSession:
        return session_key.empty();
    }
    return false;
  }

  // Probes `c` (some of them) in parallel; fills each Candidate's probe
  // with the answers that came back within probe_timeout.
  // With max_probe_candidates, the least busy (by this router's in-flight
  // counts) and `session_url`, the replica the session went to last.
  void probe(const std::vector<std::shared_ptr<Replica>>& c, const server::BuiltPrompt& prompt,
             const std::string& session_url, std::vector<Candidate>* out) {
    std::vector<size_t> chosen(c.size());
    for (size_t i = 0; i < c.size(); ++i) chosen[i] = i;
    if (options_.max_probe_candidates > 0 && chosen.size() > options_.max_probe_candidates) {
      std::stable_sort(chosen.begin(), chosen.end(), [&](size_t a, size_t b) {
        const bool sa = c[a]->url() == session_url, sb = c[b]->url() == session_url;
        if (sa != sb) return sa;
        return c[a]->num_in_flight.load() < c[b]->num_in_flight.load();
      });
      chosen.resize(options_.max_probe_candidates);
    }
    std::unordered_map<int32_t, std::string> bodies;  // by block size
    struct Pending {
      size_t index;
      int32_t block_size;
      std::future<http::ClientResult> answer;
    };
    std::vector<Pending> pending;
    for (size_t i : chosen) {
      const int32_t bs = block_size_of(c[i]->url());
      auto it = bodies.find(bs);
      if (it == bodies.end()) {
        const std::vector<BlockHash> hashes =
            block_hashes_of(prompt.prompts.front(), bs, prompt.params.cache_salt);
        it = bodies.emplace(bs, server::probe_request_body(bs, hashes)).first;
      }
      http::ClientRequest cr;
      cr.host = c[i]->endpoint().host;
      cr.port = c[i]->endpoint().port;
      cr.method = "POST";
      cr.target = std::string(server::kProbePath);
      cr.body = it->second;
      cr.headers.push_back({"Content-Type", "application/json"});
      if (!options_.replica_api_key.empty()) {
        cr.headers.push_back({"Authorization", "Bearer " + options_.replica_api_key});
      }
      cr.response_timeout = options_.probe_timeout;
      metrics_.num_probes.fetch_add(1);
      pending.push_back({i, bs, probe_client_.fetch(std::move(cr))});
    }
    const auto deadline = SteadyTime::now() + options_.probe_timeout;
    for (Pending& p : pending) {
      if (p.answer.wait_until(deadline) != std::future_status::ready) {
        metrics_.num_probe_failures.fetch_add(1);
        continue;
      }
      http::ClientResult result = p.answer.get();
      if (!result.outcome.ok() || result.response.head.status != 200) {
        metrics_.num_probe_failures.fetch_add(1);
        continue;
      }
      Result<PrefixProbe> probe = server::parse_probe_answer(result.response.body);
      if (!probe) {
        metrics_.num_probe_failures.fetch_add(1);
        continue;
      }
      if (probe->block_size != p.block_size) {
        // Hashed with the wrong size: the load is right, the hits are not
        // known. Hash with the replica's size from now on.
        learn_block_size(c[p.index]->url(), probe->block_size);
        probe->num_pool_tokens = 0;
        probe->tiers.clear();
      }
      (*out)[p.index].probe = std::move(*probe);
    }
  }

  void generation(http::HttpRequest req, http::ResponsePtr res, bool is_chat) {
    const auto t0 = SteadyTime::now();
    metrics_.num_requests.fetch_add(1);
    nlohmann::ordered_json body;  // ordered: the template sees the client's key order
    if (auto e = server::parse_json_body(req.body, options_.limits, &body)) {
      res->send(api_error_reply(*e));
      return;
    }
    // The router's own record for a worker that continues a migrated
    // request: a client's would name a host the worker then connects to.
    if (body.is_object() && body.contains("strata_resume")) {
      res->send(api_error_reply(server::invalid_param(
          "strata_resume", "is set by the router for its workers, not by clients.")));
      return;
    }
    server::BuiltPrompt prompt;
    if (auto e = builder_.build(body, is_chat, options_.limits, "", &prompt)) {
      res->send(api_error_reply(*e));
      return;
    }
    std::string session_key(req.header("x-session-id").value_or(""));
    if (session_key.empty()) session_key = prompt.params.user;

    std::vector<std::shared_ptr<Replica>> c = candidates();
    if (c.empty()) {
      metrics_.num_no_replica.fetch_add(1);
      res->send(api_error_reply(no_replica()));
      return;
    }
    std::vector<Candidate> cands(c.size());
    for (size_t i = 0; i < c.size(); ++i) {
      cands[i].replica = i;
      cands[i].url = c[i]->url();
      cands[i].num_in_flight = c[i]->num_in_flight.load();
      cands[i].routed_pending_tokens = c[i]->routed_pending_tokens.load();
    }
    if (needs_probes(session_key)) probe(c, prompt, last_replica_of(session_key), &cands);
    if (res->is_disconnected()) {
      metrics_.num_client_disconnects.fetch_add(1);
      return;
    }
    const RouteRequest rr{static_cast<int64_t>(prompt.prompts.front().size()), session_key};
    RouteChoice choice;
    {
      std::lock_guard<std::mutex> lock(policy_mu_);
      choice = policy_.choose(rr, cands);
    }
    if (!choice.order.empty()) remember_replica_of(session_key, c[choice.order.front()]->url());
    std::vector<ProxyTarget> order;
    for (size_t k : choice.order) {
      ProxyTarget t{c[k], std::nullopt};
      if (cands[k].probe) {
        t.predicted_cached_tokens = estimate_ttft(rr.num_prompt_tokens, *cands[k].probe,
                                                  cands[k].routed_pending_tokens, options_.cost)
                                        .num_cached_tokens;
      }
      order.push_back(std::move(t));
    }
    ProxyRequest pr;
    pr.method = "POST";
    pr.target = req.target;
    pr.headers = upstream_headers(req);
    // A worker being drained may hand this request to another one
    // (docs/disagg.md "Migration"): ProxyCall continues it.
    pr.headers.push_back({"X-Strata-Migratable", "1"});
    pr.body = std::move(req.body);
    pr.num_prompt_tokens = rr.num_prompt_tokens;
    pr.is_generation = true;
    metrics_.added_latency.observe(std::chrono::duration<double>(SteadyTime::now() - t0).count());
    std::shared_ptr<ProxyCall> call =
        ProxyCall::start(&upstream_, std::move(pr), std::move(order),
                         ProxyOptions{1 + options_.max_retries}, std::move(res), &metrics_);
    std::lock_guard<std::mutex> lock(calls_mu_);
    if (calls_.size() >= 4096) {  // without health checks nobody else prunes
      std::erase_if(calls_, [](const std::weak_ptr<ProxyCall>& w) { return w.expired(); });
    }
    calls_.push_back(call);
  }

  void health_loop() {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!is_stopped_) {
      lock.unlock();
      check_health();
      lock.lock();
      stop_cv_.wait_for(lock, options_.health_interval, [this] { return is_stopped_; });
    }
  }

  void check_health() {
    const auto all = replicas_.replicas();
    std::vector<std::future<http::ClientResult>> answers;
    for (const auto& r : all) {
      http::ClientRequest cr;
      cr.host = r->endpoint().host;
      cr.port = r->endpoint().port;
      cr.target = "/health";
      answers.push_back(control_.fetch(std::move(cr)));
    }
    std::vector<const Replica*> ejected;
    for (size_t i = 0; i < all.size(); ++i) {
      http::ClientResult result = answers[i].get();
      if (result.outcome.ok() && result.response.head.status == 200) {
        all[i]->record_success();
      } else if (!result.outcome.ok()) {
        all[i]->record_failure("health check: " + result.outcome.message);
      } else {
        all[i]->record_failure("health check: status " +
                               std::to_string(result.response.head.status));
      }
      if (all[i]->state() == CircuitBreaker::State::kOpen) ejected.push_back(all[i].get());
    }
    abandon_tries_on(ejected);
  }

  // Moves requests waiting on ejected replicas elsewhere (proxy_call.h),
  // and forgets finished calls.
  void abandon_tries_on(const std::vector<const Replica*>& ejected) {
    std::vector<std::shared_ptr<ProxyCall>> live;
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      std::vector<std::weak_ptr<ProxyCall>> kept;
      for (auto& w : calls_) {
        if (auto c = w.lock()) {
          live.push_back(std::move(c));
          kept.push_back(std::move(w));
        }
      }
      calls_ = std::move(kept);
    }
    if (ejected.empty()) return;
    for (const auto& c : live) {
      const std::shared_ptr<Replica> r = c->current_replica();
      if (r == nullptr) continue;
      for (const Replica* e : ejected) {
        if (r.get() == e) c->abandon_try_on(e);
      }
    }
  }

  const Tokenizer& tokenizer_;
  RouterOptions options_;
  std::shared_ptr<const server::ChatTemplate> chat_template_;
  server::PromptBuilder builder_;
  SteadyClock clock_;
  ReplicaSet replicas_;
  std::mutex policy_mu_;
  RoutePolicy policy_;
  RouterMetrics metrics_;
  // Generation calls in flight, for abandoning tries on ejected replicas.
  std::mutex calls_mu_;
  std::vector<std::weak_ptr<ProxyCall>> calls_;
  std::mutex block_size_mu_;
  std::unordered_map<std::string, int32_t> block_sizes_;
  static constexpr size_t kMaxRememberedSessions = 65536;
  std::mutex session_mu_;
  std::unordered_map<std::string, std::string> last_replica_;
  // Clients before the server: the server's handlers use them, and the
  // server is stopped (its handlers joined) before they are destroyed.
  http::HttpClient upstream_;
  http::HttpClient control_;
  http::HttpClient probe_client_;
  std::unique_ptr<http::HttpServer> server_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool is_stopped_ = false;
  std::thread health_thread_;
};

Result<std::unique_ptr<RouterServer>> RouterServer::create(const Tokenizer& tokenizer,
                                                           RouterOptions options) {
  auto impl = std::make_unique<Impl>(tokenizer, std::move(options));
  STRATA_RETURN_IF_ERROR(impl->init());
  return std::unique_ptr<RouterServer>(new RouterServer(std::move(impl)));
}

RouterServer::RouterServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RouterServer::~RouterServer() = default;
Status RouterServer::start() {
  return impl_->start();
}
uint16_t RouterServer::port() const {
  return impl_->port();
}
Status RouterServer::set_replicas(const std::vector<std::string>& urls) {
  return impl_->set_replicas(urls);
}
std::vector<std::string> RouterServer::replica_urls() const {
  return impl_->replica_urls();
}
void RouterServer::stop() {
  impl_->stop();
}
const RouterMetrics& RouterServer::metrics() const {
  return impl_->metrics();
}
std::string RouterServer::metrics_text() const {
  return impl_->metrics_text();
}

}  // namespace strata::router
