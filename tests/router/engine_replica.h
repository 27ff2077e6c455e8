// EngineReplica: a replica for the router's tests backed by a real Engine
// on the small test model: POST /strata/v1/probe is the real route
// (server::handle_probe), and generations (non-streaming chat and
// completions, greedy) run through the same PromptBuilder the server uses,
// answering with the engine's usage (cached_tokens included). So a router
// test sees exactly what the engine's prefix cache holds, with no HTTP
// server beyond strata_http.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "http/http_server.h"
#include "server/chat_template.h"
#include "server/prompt_builder.h"

namespace strata::router::testing {

class EngineReplica {
 public:
  // `num_kv_blocks` blocks of 16 tokens.
  EngineReplica(std::string name, int64_t num_kv_blocks = 128);
  ~EngineReplica();

  bool ok() const { return engine_ != nullptr && port_ != 0; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  Engine& engine() { return *engine_; }
  const server::PromptBuilder& builder() const { return *builder_; }
  int num_generations() const { return num_generations_.load(); }
  // Runs `prompt_ids` to completion here directly (greedy, one token), so
  // this replica's pool holds their full blocks.
  void warm(const std::vector<int32_t>& prompt_ids);

 private:
  void generation(http::HttpRequest req, http::ResponsePtr res, bool is_chat);

  std::string name_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<server::ChatTemplate> chat_template_;
  std::unique_ptr<server::PromptBuilder> builder_;
  std::unique_ptr<http::HttpServer> server_;
  uint16_t port_ = 0;
  std::atomic<int> num_generations_{0};
};

}  // namespace strata::router::testing
