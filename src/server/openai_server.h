// OpenAiServer: the OpenAI-compatible HTTP front of an Engine (cpp-httplib,
// one pooled thread per connection).
//
// Routes: POST /v1/completions, POST /v1/chat/completions (JSON or SSE),
// GET /v1/models[/{id}], GET /health, GET /metrics, POST /tokenize,
// POST /detokenize. Every error is an OpenAI error body (server/api_error.h).
//
// Transport guards: a per-connection watchdog shuts down connections whose
// headers or body do not arrive within their deadlines (slowloris), bodies
// over max_body_bytes get 413, and a write timeout ends a stream whose reader
// stalls (SSE frames go straight to the socket, so no user-space queue grows;
// the kernel's send buffer is left to its autotuning). The accept backlog is
// raised from httplib's 5 so that bursts of connects are not dropped. A client that disconnects
// (seen by polling its socket between engine events) has its request aborted in the engine, all n
// choices included.
//
// Borrows the Engine and Tokenizer (they must outlive it). serve() blocks;
// begin_drain(), stop() and the accessors are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/chat_template.h"
#include "server/protocol.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace strata::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;  // 0 = any free port (see OpenAiServer::port())
  // The model id clients must send (and /v1/models lists).
  std::string served_model_name = "strata";
  // Bearer key required on every route but /health; empty = no auth.
  std::string api_key;
  // Generation requests held beyond the engine's --max-num-seqs before 429.
  int32_t max_queue = 1024;
  size_t max_body_bytes = size_t{4} << 20;
  // Whole request headers must arrive within this (slowloris guard).
  int32_t header_timeout_s = 10;
  // The body must arrive within this after the headers.
  int32_t request_timeout_s = 60;
  // Keep-alive connections idle longer than this are closed.
  int32_t idle_timeout_s = 5;
  // A single write blocked longer than this (stalled reader) ends the stream.
  int32_t write_timeout_s = 30;
  // HTTP worker threads: each open connection holds one.
  int32_t num_http_threads = 512;
  // Seconds between throughput log lines; 0 = none.
  double log_interval_s = 5.0;
  ProtocolLimits limits;  // vocab_size and max_model_len are filled from the engine
};

class OpenAiServer {
 public:
  OpenAiServer(Engine& engine, const Tokenizer& tokenizer, ServerOptions options);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  // Binds the listening socket (port 0 picks a free one).
  Status bind();
  int port() const { return bound_port_; }
  // Serves until stop(); returns after the listener has closed.
  void serve();
  // New generation requests get 503 and /health turns 503; in-flight ones go on.
  void begin_drain();
  void stop();
  int64_t num_in_flight() const { return num_in_flight_.load(); }
  const ChatTemplate& chat_template() const { return chat_template_; }

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
  ChatTemplate chat_template_;
  std::atomic<int64_t> num_in_flight_{0};
  int bound_port_ = 0;
};

}  // namespace strata::server
