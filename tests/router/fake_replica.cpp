#include "router/fake_replica.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "server/probe_route.h"

namespace strata::router::testing {

using nlohmann::json;

FakeReplica::FakeReplica(std::string name, std::string model_id)
    : name_(std::move(name)), model_id_(std::move(model_id)) {
  probe_.block_size = 16;
  probe_.prefill_tokens_per_s = 1000.0;
  http::HttpServerOptions o;
  o.port = 0;
  o.num_io_threads = 1;
  o.linger_timeout = std::chrono::milliseconds(100);
  server_ = std::make_unique<http::HttpServer>(o, routes());
  if (server_->bind().is_ok() && server_->start().is_ok()) port_ = server_->port();
}

FakeReplica::~FakeReplica() {
  stop();
}

std::string FakeReplica::url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

void FakeReplica::stop() {
  if (server_) server_->stop();
  std::lock_guard<std::mutex> lock(mu_);
  kept_.clear();
}

void FakeReplica::set_mode(Mode mode, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  mode_ = mode;
  status_ = status;
}
void FakeReplica::set_probe(const PrefixProbe& probe) {
  std::lock_guard<std::mutex> lock(mu_);
  probe_ = probe;
}
void FakeReplica::set_probe_silent(bool silent) {
  std::lock_guard<std::mutex> lock(mu_);
  is_probe_silent_ = silent;
}
void FakeReplica::set_cached_tokens(int64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  cached_tokens_ = n;
}
void FakeReplica::set_health_status(int status) {
  std::lock_guard<std::mutex> lock(mu_);
  health_status_ = status;
}
std::string FakeReplica::last_probe_body() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_probe_body_;
}
std::string FakeReplica::last_authorization() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_authorization_;
}

http::Router FakeReplica::routes() {
  http::Router r;
  r.add("GET", "/health", [this](http::HttpRequest, http::ResponsePtr res) {
    int status = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      status = health_status_;
    }
    res->send(status, "application/json", "{}");
  });
  r.add("GET", "/v1/models", [this](http::HttpRequest, http::ResponsePtr res) {
    const json card{{"id", model_id_}, {"object", "model"}, {"owned_by", "strata"}};
    res->send(200, "application/json", json{{"object", "list"}, {"data", {card}}}.dump());
  });
  r.add("POST", std::string(server::kProbePath),
        [this](http::HttpRequest req, http::ResponsePtr res) {
          num_probes_.fetch_add(1);
          std::lock_guard<std::mutex> lock(mu_);
          last_probe_body_ = req.body;
          if (is_probe_silent_) {
            kept_.push_back(res);
            return;
          }
          res->send(200, "application/json", server::probe_answer_json(probe_).dump());
        });
  for (const char* path : {"/v1/completions", "/v1/chat/completions", "/tokenize"}) {
    r.add("POST", path, [this](http::HttpRequest req, http::ResponsePtr res) {
      generation(std::move(req), std::move(res));
    });
  }
  return r;
}

void FakeReplica::generation(http::HttpRequest req, http::ResponsePtr res) {
  num_generations_.fetch_add(1);
  Mode mode;
  int status;
  int64_t cached;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mode = mode_;
    status = status_;
    cached = cached_tokens_;
    last_authorization_ = std::string(req.header("authorization").value_or(""));
  }
  const json usage{{"prompt_tokens", 20},
                   {"completion_tokens", 2},
                   {"total_tokens", 22},
                   {"prompt_tokens_details", {{"cached_tokens", cached}}}};
  auto event = [&](const std::string& text) {
    return http::sse_event(
        json{{"object", "text_completion"}, {"choices", {{{"index", 0}, {"text", text}}}}}.dump());
  };
  switch (mode) {
    case Mode::kJson:
      res->send(200, "application/json",
                json{{"object", "text_completion"},
                     {"replica", name_},
                     {"choices", {{{"index", 0}, {"text", name_}}}},
                     {"usage", usage}}
                    .dump());
      return;
    case Mode::kSse:
      res->start_sse();
      res->write(event(name_));
      res->write(event("!"));
      res->write(http::sse_event(json{{"choices", json::array()}, {"usage", usage}}.dump()));
      res->write("data: [DONE]\n\n");
      res->finish();
      return;
    case Mode::kStatus:
      res->send(status, "application/json",
                json{{"error", {{"message", name_ + " refuses"}, {"type", "x"}}}}.dump());
      return;
    case Mode::kDrop:
      return;
    case Mode::kMidStream:
      res->start_sse();
      res->write(event(name_));
      return;  // dropped unfinished: the connection closes without the last chunk
    case Mode::kSilent: {
      res->on_disconnect([this] { num_disconnects_.fetch_add(1); });
      std::lock_guard<std::mutex> lock(mu_);
      kept_.push_back(res);
      return;
    }
    case Mode::kHang: {
      res->on_disconnect([this] { num_disconnects_.fetch_add(1); });
      res->start_sse();
      res->write(event(name_));
      std::lock_guard<std::mutex> lock(mu_);
      kept_.push_back(res);
      return;
    }
  }
}

}  // namespace strata::router::testing
