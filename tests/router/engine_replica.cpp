#include "router/engine_replica.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "engine/engine_test_util.h"
#include "server/probe_route.h"
#include "server/protocol.h"

namespace strata::router::testing {
namespace {

using nlohmann::json;
using strata::testing::peaky_model;

}  // namespace

EngineReplica::EngineReplica(std::string name, int64_t num_kv_blocks) : name_(std::move(name)) {
  if (!peaky_model().tokenizer) return;
  EngineOptions o = strata::testing::small_options(num_kv_blocks);
  o.num_threads = 1;
  Result<std::unique_ptr<Engine>> e =
      Engine::create(*peaky_model().weights, *peaky_model().tokenizer, o);
  if (!e) return;
  engine_ = std::move(*e);
  Result<server::ChatTemplate> tpl = server::ChatTemplate::for_model(*peaky_model().tokenizer);
  if (!tpl) return;
  chat_template_ = std::make_unique<server::ChatTemplate>(std::move(*tpl));
  builder_ = std::make_unique<server::PromptBuilder>(*peaky_model().tokenizer, *chat_template_);

  http::Router r;
  r.add("GET", "/health",
        [](http::HttpRequest, http::ResponsePtr res) { res->send(200, "application/json", "{}"); });
  r.add("POST", std::string(server::kProbePath),
        [this](http::HttpRequest req, http::ResponsePtr res) {
          res->send(server::handle_probe(*engine_, req.body));
        });
  r.add(
      "POST", "/v1/chat/completions",
      [this](http::HttpRequest req, http::ResponsePtr res) {
        generation(std::move(req), std::move(res), true);
      },
      http::RunOn::kWorker);
  r.add(
      "POST", "/v1/completions",
      [this](http::HttpRequest req, http::ResponsePtr res) {
        generation(std::move(req), std::move(res), false);
      },
      http::RunOn::kWorker);
  http::HttpServerOptions so;
  so.port = 0;
  so.num_io_threads = 1;
  so.num_worker_threads = 2;
  so.linger_timeout = std::chrono::milliseconds(100);
  server_ = std::make_unique<http::HttpServer>(so, std::move(r));
  if (server_->bind().is_ok() && server_->start().is_ok()) port_ = server_->port();
}

EngineReplica::~EngineReplica() {
  if (server_) server_->stop();
}

void EngineReplica::warm(const std::vector<int32_t>& prompt_ids) {
  Result<std::shared_ptr<RequestStream>> s =
      engine_->add_request(strata::testing::greedy_request(prompt_ids, 1));
  if (!s) return;
  while ((*s)->pop()) {
  }
}

void EngineReplica::generation(http::HttpRequest req, http::ResponsePtr res, bool is_chat) {
  num_generations_.fetch_add(1);
  server::ProtocolLimits limits;
  limits.vocab_size = peaky_model().tokenizer->vocab_size();
  limits.max_model_len = engine_->max_model_len();
  json body;
  server::BuiltPrompt p;
  if (auto e = server::parse_json_body(req.body, limits, &body)) {
    res->send(e->http_status, "application/json", e->body());
    return;
  }
  if (auto e = builder_->build(body, is_chat, limits, "", &p)) {
    res->send(e->http_status, "application/json", e->body());
    return;
  }
  GenerationRequest g =
      strata::testing::greedy_request(p.prompts.front(), p.params.max_tokens.value_or(4));
  g.cache_salt = p.params.cache_salt;
  Result<std::shared_ptr<RequestStream>> s = engine_->add_request(std::move(g));
  if (!s) {
    res->send(500, "application/json", "{}");
    return;
  }
  std::string text;
  TokenUsage usage;
  while (std::optional<TokenEvent> e = (*s)->pop()) {
    text += e->text;
    if (e->is_final) usage = e->usage;
  }
  const json choice =
      is_chat ? json{{"index", 0}, {"message", {{"role", "assistant"}, {"content", text}}}}
              : json{{"index", 0}, {"text", text}};
  res->send(200, "application/json",
            json{{"replica", name_},
                 {"choices", {choice}},
                 {"usage",
                  {{"prompt_tokens", usage.num_prompt_tokens},
                   {"completion_tokens", usage.num_output_tokens},
                   {"prompt_tokens_details", {{"cached_tokens", usage.num_cached_prompt_tokens}}}}}}
                .dump());
}

}  // namespace strata::router::testing
