// OpenAiServer: the OpenAI-compatible HTTP front of an Engine, on strata's
// event-driven HTTP stack (src/http: a few I/O threads, no thread per
// connection).
//
// Routes: POST /v1/completions, POST /v1/chat/completions (JSON or SSE),
// GET /v1/models[/{id}], GET /health, GET /metrics, POST /tokenize,
// POST /detokenize, POST /strata/v1/drain (admin: {"migrate": true,
// "timeout_s": T}: drain, handing the running requests a router sent to
// other workers, then stop; docs/disagg.md "Migration"). Every error, the transport's own included
// (malformed HTTP, 413, 431, timeouts, 404, 405), is an OpenAI error body (server/api_error.h).
//
// Threads: the HTTP I/O threads parse, check auth and answer the cheap GET
// routes; the parse-and-tokenize routes run on the HTTP worker threads; the
// engine's output goes out through an EventPump (server/event_pump.h) that
// formats the chunks of every active request as their events arrive
// (server/generation_call.h). A client that disconnects, streaming or not,
// has its request aborted in the engine at once.
//
// Lifecycle: bind() (a port in use is an error), serve() blocks until
// stop(); drain(timeout) stops accepting, lets in-flight requests finish
// for at most `timeout`, aborts the rest (their clients get a final error)
// and returns once they are answered. Borrows the Engine and Tokenizer
// (they must outlive it). begin_drain(), drain(), stop() and the accessors
// are thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/engine.h"
#include "server/chat_template.h"
#include "server/protocol.h"
#include "server/reasoning_parser.h"
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
  // A write that makes no progress for this long (stalled reader) ends the
  // connection, and its request is aborted.
  int32_t write_timeout_s = 30;
  // HTTP I/O threads (each serves many connections).
  int32_t num_http_threads = 2;
  // Threads that parse and tokenize request bodies (the POST routes).
  int32_t num_worker_threads = 2;
  // Threads that format engine output into responses.
  int32_t num_stream_threads = 1;
  // Open connections; past it a new one gets 503 and is closed.
  int32_t max_connections = 10000;
  // Seconds between throughput log lines; 0 = none.
  double log_interval_s = 5.0;
  ProtocolLimits limits;  // vocab_size and max_model_len are filled from the engine
  // The chat template every chat request renders; null: the model's own
  // (tokenizer.chat_template), or ChatML when it has none or it does not
  // parse (logged). `strata serve` loads --chat-template FILE into it.
  std::shared_ptr<const ChatTemplate> chat_template;
  std::string chat_template_path;  // --chat-template, read by `strata serve`
  // --reasoning-parser: splits chat output into reasoning_content and content.
  ReasoningParserKind reasoning_parser = ReasoningParserKind::kNone;
  std::string reasoning_parser_name;  // the flag's text, checked by `strata serve`
  // Tool-call syntax (hermes, llama3_json, mistral); empty = from the chat
  // template, else hermes (server/output_constraint.h).
  std::string tool_call_parser;
  // More Prometheus text appended to /metrics (the disaggregation's KV
  // transfer counters); called on an HTTP thread, must be thread-safe.
  std::function<std::string()> extra_metrics_text;
  // Migration (docs/disagg.md "Migration"), for a decode worker that serves
  // its KV. `migration_kv_peer`: HOST:PORT of its KV transfer channel (null:
  // its requests cannot migrate; POST /strata/v1/drain then lets them
  // finish). `on_migration`: counts a request migrated out (true) or in.
  // `wait_kv_pulled`: after a migrating drain, returns once `n` migrated
  // requests' KV was pulled or `deadline` passed. All thread-safe.
  std::function<std::string()> migration_kv_peer;
  std::function<void(bool out)> on_migration;
  std::function<void(int64_t n, std::chrono::steady_clock::time_point deadline)> wait_kv_pulled;
};

class OpenAiServer {
 public:
  OpenAiServer(Engine& engine, const Tokenizer& tokenizer, ServerOptions options);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  // Binds the listening socket (port 0 picks a free one). Error: "http:
  // cannot listen on HOST:PORT: <reason>".
  Status bind();
  int port() const;
  // Starts the HTTP threads and serves until stop().
  void serve();
  // Stops accepting: the listener closes, new generation requests on open
  // connections get 503 and /health turns 503; in-flight ones go on.
  void begin_drain();
  // begin_drain(), then waits up to `timeout` for in-flight requests to end;
  // aborts those still running (each client gets the abort as its final
  // error) and waits a moment for their answers to be written. Returns the
  // number aborted.
  int64_t drain(std::chrono::milliseconds timeout);
  // Closes every connection and makes serve() return.
  void stop();
  int64_t num_in_flight() const;
  const ChatTemplate& chat_template() const { return *chat_template_; }

 private:
  class Impl;
  std::shared_ptr<const ChatTemplate> chat_template_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::server
