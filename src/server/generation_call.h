// GenerationCall: one completions or chat request from admission to its
// last byte: it owns the request's engine streams (one per prompt), turns
// their TokenEvents into the OpenAI response (SSE chunks as they come, or
// one JSON body at the end) and answers through its HttpResponse.
//
// Event-driven: each stream's listener schedules the call on the server's
// EventPump, whose thread drains every event queued and writes the frames
// of one drain as one piece. No thread waits on the request.
//
// A client that disconnects (streaming or not) aborts every stream at once
// (HttpResponse::on_disconnect), so the engine frees the KV within one
// step. A choice that ends in error ends the response with the OpenAI error
// (a status for a non-streaming request, an error event then [DONE] for a
// stream) and aborts the other streams. `on_answered` runs once, after the
// last bytes of the response were handed to the HttpResponse (a drain waits
// for it). `on_engine_done` runs once, when
// the engine has closed every stream (or the call dies first), on whichever
// thread sees it: the server frees the request's admission slot there.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/resume_state.h"
#include "http/http_response.h"
#include "http/router.h"
#include "server/event_pump.h"
#include "server/openai_response.h"
#include "server/output_constraint.h"
#include "server/protocol.h"
#include "server/reasoning_parser.h"

namespace strata::server {

// What one generation request needs from parsing to its last event.
struct Generation {
  bool is_chat = false;
  std::string id;
  int64_t created = 0;
  std::string model;  // the served model name, echoed in every chunk
  GenerationParams params;
  // One entry per prompt (completions may send a list; chat has one).
  std::vector<std::vector<int32_t>> prompt_ids;
  std::vector<std::string> echo_texts;  // completions with echo, per prompt
  int32_t num_top_logprobs = 0;         // per token
  bool wants_logprobs = false;
  // Chat with --reasoning-parser: the output splits into reasoning_content
  // and content (server/reasoning_parser.h).
  ReasoningParserKind reasoning_parser = ReasoningParserKind::kNone;
  bool is_thinking_disabled = false;  // chat_template_kwargs enable_thinking false
  // Structured outputs and tools (server/output_constraint.h); null: none.
  std::shared_ptr<const OutputConstraint> constraint;
  // Migration (docs/disagg.md "Migration"). `resume`: this call continues
  // a request another worker ran (the router's "strata_resume"): a stream
  // sends only the continuation (no role chunk), a body the whole response.
  // `is_migratable`: a router sent it (X-Strata-Migratable) and it is one
  // plain choice (n == 1, one prompt, no echo, logprobs, reasoning split or
  // output constraint), so a drain may hand it to another worker.
  std::shared_ptr<const ResumeState> resume;
  bool is_migratable = false;
};

// The SSE event name and body key of a migration record (the router's
// ProxyCall recognises them): {"strata_migrate": <resume_state_to_json>}.
inline constexpr std::string_view kMigrateEvent = "strata.migrate";
inline constexpr std::string_view kMigrateKey = "strata_migrate";

class GenerationCall : public EventPump::Task, public std::enable_shared_from_this<GenerationCall> {
 public:
  GenerationCall(Engine& engine, TokenTextFn token_text, std::shared_ptr<const Generation> g,
                 http::ResponsePtr response, std::function<void()> on_engine_done,
                 std::function<void()> on_answered = nullptr);
  ~GenerationCall() override;

  // Takes the engine streams (one per prompt, in order), writes the stream's
  // opening chunks, and starts listening. Call once, right after admission.
  void start(std::vector<std::shared_ptr<RequestStream>> streams,
             const std::shared_ptr<EventPump>& pump);
  // Aborts every stream (drain timeout, server stop); the client gets the
  // abort as the final error.
  void abort();
  // Drain with migration: asks the engine to export the request (its
  // response then ends with the migration record, and `on_migrated` runs);
  // false when this call cannot move (it then finishes normally).
  bool migrate(const std::string& kv_peer);
  void run() override;

 private:
  struct Choice {
    std::vector<int32_t> token_ids;
    std::vector<SampleResult> logprobs;
    std::string text;
    FinishReason finish_reason = FinishReason::kNone;
    nlohmann::json stop_reason;  // null, the stop string, or the stop token id
    size_t text_offset = 0;      // completions logprobs: bytes emitted before
    ReasoningParser reasoning{ReasoningParserKind::kNone, false};  // streaming split
    std::unique_ptr<ChoiceOutput> output;  // tool calls and the grammar check
    bool has_resumed_text = false;         // a migrated body's earlier text was put first
  };

  int32_t num_choices() const { return static_cast<int32_t>(choices_.size()); }
  nlohmann::json chunk_base() const;
  // Appends the SSE frames for one event to `out`.
  void stream_event(int32_t index, const TokenEvent& ev, std::string* out);
  void finish_stream(std::string* out);
  void send_body();
  void fail(const TokenEvent& ev, std::string* out);
  void release_engine();
  // Ends the response with the migration record of `state`.
  void send_migration(const ResumeState& state, std::string* out);

  Engine& engine_;
  const TokenTextFn token_text_;
  const std::shared_ptr<const Generation> g_;
  const http::ResponsePtr response_;
  std::function<void()> on_engine_done_;  // cleared once run
  std::function<void()> on_answered_;     // likewise

 public:
  // Runs once, on the pump thread, when a migration record was sent.
  std::function<void()> on_migrated;

 private:
  // Touched by the pump thread only (run() never runs concurrently), and by
  // start() before the first run.
  std::vector<std::shared_ptr<RequestStream>> streams_;
  std::vector<Choice> choices_;
  TokenUsage usage_;
  int32_t num_open_ = 0;
  bool is_failed_ = false;    // an error was answered
  bool is_answered_ = false;  // the response is complete (or failed)
  // migrate() runs on any thread, possibly before start().
  std::mutex migrate_mu_;           // guards the two below
  StreamId migratable_stream_ = 0;  // the one stream a drain may migrate (0: not started)
  std::optional<std::string> pending_migration_;  // asked before start(): its kv peer
};

}  // namespace strata::server
