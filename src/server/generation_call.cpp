#include "server/generation_call.h"

#include <utility>

#include "server/api_error.h"

namespace strata::server {
namespace {

using nlohmann::json;

constexpr std::string_view kDone = "data: [DONE]\n\n";

// vLLM's stop_reason: the stop string or stop token id that ended a choice.
json stop_reason_json(const TokenEvent& e) {
  if (!e.stop_string.empty()) return json(e.stop_string);
  if (e.stop_token_id >= 0) return json(e.stop_token_id);
  return json();
}

// The error a choice's final kError / kAbort event stands for.
ApiError final_event_error(const TokenEvent& e) {
  if (e.finish_reason == FinishReason::kAbort) {
    return engine_error(StatusCode::kResourceExhausted, "The request was aborted.");
  }
  return engine_error(e.error_code, e.error_message.empty() ? "request failed" : e.error_message);
}

}  // namespace

GenerationCall::GenerationCall(Engine& engine, TokenTextFn token_text,
                               std::shared_ptr<const Generation> g, http::ResponsePtr response,
                               std::function<void()> on_engine_done,
                               std::function<void()> on_answered)
    : engine_(engine),
      token_text_(std::move(token_text)),
      g_(std::move(g)),
      response_(std::move(response)),
      on_engine_done_(std::move(on_engine_done)),
      on_answered_(std::move(on_answered)) {
  const size_t n = g_->prompt_ids.size() * static_cast<size_t>(g_->params.n);
  choices_.resize(n);
  for (size_t p = 0; p < g_->echo_texts.size(); ++p) {
    for (int32_t j = 0; j < g_->params.n; ++j) {
      choices_[p * g_->params.n + j].text_offset = g_->echo_texts[p].size();
    }
  }
  if (g_->is_chat) {
    for (Choice& c : choices_) {
      c.reasoning = ReasoningParser(g_->reasoning_parser, g_->is_thinking_disabled);
    }
  }
  num_open_ = static_cast<int32_t>(n);
  if (g_->constraint) {  // structured outputs / tools: output_constraint.h
    for (size_t i = 0; i < n; ++i) {
      const std::string tail = g_->id.substr(g_->id.find('-') + 1);
      choices_[i].output = std::make_unique<ChoiceOutput>(
          g_->constraint, "call_" + tail + "_" + std::to_string(i) + "_");
    }
  }
}

GenerationCall::~GenerationCall() {
  if (num_open_ > 0) abort();
  release_engine();
  if (auto answered = std::exchange(on_answered_, nullptr)) answered();
}

void GenerationCall::release_engine() {
  if (auto done = std::exchange(on_engine_done_, nullptr)) done();
}

void GenerationCall::abort() {
  for (const auto& s : streams_) engine_.abort(s->id());
}

bool GenerationCall::migrate(const std::string& kv_peer) {
  if (!g_->is_migratable) return false;
  std::lock_guard<std::mutex> lock(migrate_mu_);
  if (migratable_stream_ == 0) {
    // Admitted but not started yet: start() asks once it has the stream.
    pending_migration_ = kv_peer;
    return true;
  }
  engine_.migrate(migratable_stream_, kv_peer);
  return true;
}

void GenerationCall::send_migration(const ResumeState& state, std::string* out) {
  is_answered_ = true;
  ResumeState s = state;
  s.response_id = g_->id;
  s.created = g_->created;
  const json record{{kMigrateKey, resume_state_to_json(s)}};
  if (g_->params.stream) {
    *out += "event: ";
    *out += kMigrateEvent;
    *out += "\ndata: " + dump_json(record) + "\n\n";
  } else {
    response_->send(200, "application/json", dump_json(record));
  }
  if (auto migrated = std::exchange(on_migrated, nullptr)) migrated();
}

json GenerationCall::chunk_base() const {
  return json{{"id", g_->id},
              {"object", g_->is_chat ? "chat.completion.chunk" : "text_completion"},
              {"created", g_->created},
              {"model", g_->model}};
}

void GenerationCall::start(std::vector<std::shared_ptr<RequestStream>> streams,
                           const std::shared_ptr<EventPump>& pump) {
  streams_ = std::move(streams);
  if (g_->is_migratable && streams_.size() == 1) {
    std::lock_guard<std::mutex> lock(migrate_mu_);
    migratable_stream_ = streams_[0]->id();
    if (pending_migration_) engine_.migrate(migratable_stream_, *pending_migration_);
  }
  if (g_->params.stream) response_->start_sse();
  // The continuation of a migrated stream opens with nothing: the client has
  // the opening chunks (and the text so far) from the worker that started it.
  if (g_->params.stream && !g_->resume) {
    // Chat: the role first, for every choice; completions with echo: the prompt.
    std::string frames;
    for (int32_t i = 0; i < num_choices(); ++i) {
      json ch{{"index", i}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
      if (g_->is_chat) {
        ch["delta"] = json{{"role", "assistant"}, {"content", ""}};
      } else {
        const size_t p = static_cast<size_t>(i / g_->params.n);
        if (p >= g_->echo_texts.size() || g_->echo_texts[p].empty()) continue;
        ch["text"] = g_->echo_texts[p];
      }
      json c = chunk_base();
      c["choices"] = json::array({std::move(ch)});
      if (g_->params.include_usage) c["usage"] = nullptr;
      frames += sse_frame(c);
    }
    response_->write(frames);
  }
  // The engine's work stops as soon as the client goes away. Engine::abort
  // only queues, so this is safe on the I/O thread.
  std::weak_ptr<GenerationCall> weak = weak_from_this();
  response_->on_disconnect([weak] {
    if (auto self = weak.lock()) self->abort();
  });
  // The engine thread calls the listener, possibly while the server (and
  // its pump) is being destroyed: neither is touched once gone.
  std::weak_ptr<EventPump> weak_pump = pump;
  for (const auto& s : streams_) {
    s->set_listener([weak, weak_pump] {
      auto self = weak.lock();
      auto p = weak_pump.lock();
      if (self && p) p->schedule(std::move(self));
    });
  }
}

void GenerationCall::fail(const TokenEvent& ev, std::string* out) {
  is_failed_ = true;
  is_answered_ = true;
  abort();  // the other prompts' streams, if any
  const ApiError e = final_event_error(ev);
  if (g_->params.stream) {
    *out += sse_frame(e.to_json());
    *out += kDone;
  } else {
    response_->send(e.http_status, "application/json", e.body());
  }
}

void GenerationCall::run() {
  std::string frames;
  const int32_t n = g_->params.n;
  for (size_t p = 0; p < streams_.size(); ++p) {
    while (std::optional<TokenEvent> ev = streams_[p]->try_pop()) {
      if (ev->choice_index < 0 || ev->choice_index >= n) continue;
      const int32_t index = static_cast<int32_t>(p) * n + ev->choice_index;
      if (ev->is_final) {
        --num_open_;
        usage_.num_prompt_tokens += ev->choice_index == 0 ? ev->usage.num_prompt_tokens : 0;
        usage_.num_output_tokens += ev->usage.num_output_tokens;
        if (ev->choice_index == 0) {
          usage_.num_cached_prompt_tokens += ev->usage.num_cached_prompt_tokens;
        }
      }
      if (is_answered_) continue;  // drained only so the engine's end is seen
      if (ev->is_final && ev->finish_reason == FinishReason::kAbort) {
        if (std::shared_ptr<const ResumeState> state = streams_[p]->resume_state()) {
          send_migration(*state, &frames);
          continue;
        }
      }
      if (ev->is_final && (ev->finish_reason == FinishReason::kError ||
                           ev->finish_reason == FinishReason::kAbort)) {
        fail(*ev, &frames);
        continue;
      }
      if (g_->params.stream) {
        stream_event(index, *ev, &frames);
      } else {
        Choice& c = choices_[index];
        if (g_->resume && !c.has_resumed_text) {
          c.has_resumed_text = true;
          // A migrated request's body is the whole response: the text the
          // other worker produced comes first (its tokens, replayed here).
          c.text = streams_[p]->resumed_text();
          c.token_ids = g_->resume->output_tokens;
        }
        c.text += ev->text;
        c.token_ids.insert(c.token_ids.end(), ev->token_ids.begin(), ev->token_ids.end());
        c.logprobs.insert(c.logprobs.end(), ev->logprobs.begin(), ev->logprobs.end());
        if (ev->is_final) {
          c.finish_reason = ev->finish_reason;
          c.stop_reason = stop_reason_json(*ev);
        }
      }
    }
  }
  const bool is_engine_done = num_open_ <= 0;
  // The slot is free before the last bytes are queued: a client that sends
  // its next request right after [DONE] must find it free.
  if (is_engine_done) release_engine();
  if (is_engine_done && !is_answered_) {
    is_answered_ = true;
    if (g_->params.stream) {
      finish_stream(&frames);
    } else {
      send_body();
    }
  }
  if (g_->params.stream) {
    if (!frames.empty() && !response_->write(frames)) abort();
    if (is_answered_ && is_engine_done) response_->finish();
  }
  // After the last bytes are queued: a drain waits for this.
  if (is_engine_done) {
    if (auto answered = std::exchange(on_answered_, nullptr)) answered();
  }
}

void GenerationCall::stream_event(int32_t index, const TokenEvent& ev, std::string* out) {
  if (ev.text.empty() && !ev.is_final && !g_->wants_logprobs) return;
  Choice& cs = choices_[index];
  if (cs.output) cs.text += ev.text;  // for the post-generation check
  json delta;                         // chat
  if (g_->is_chat && cs.reasoning.is_active()) {
    // A partial tag is held back until the next event decides it; the
    // final event releases whatever is left.
    ReasoningDelta d = cs.reasoning.push(ev.text);
    if (ev.is_final) {
      ReasoningDelta tail = cs.reasoning.finish();
      d.reasoning += tail.reasoning;
      d.content += tail.content;
    }
    delta = json::object();
    if (!d.reasoning.empty()) delta["reasoning_content"] = std::move(d.reasoning);
    if (!d.content.empty()) delta["content"] = std::move(d.content);
    if (delta.empty() && !ev.is_final && !g_->wants_logprobs) return;
  } else if (cs.output) {
    // Structured outputs / tools (output_constraint.h): tool-call deltas.
    delta = cs.output->stream_delta(ev.text, ev.is_final);
    if (delta.is_null() && !ev.is_final && !g_->wants_logprobs) return;
    if (delta.is_null()) delta = json::object();
  } else if (g_->is_chat) {
    delta = ev.is_final && ev.text.empty() ? json::object() : json{{"content", ev.text}};
  }
  if (cs.output && ev.is_final) {  // the post-generation check (output_constraint.h)
    cs.output->check(cs.text, ev.finish_reason, !stop_reason_json(ev).is_null());
  }
  json ch{{"index", index}};
  const char* reason = !ev.is_final ? nullptr
                       : cs.output  ? cs.output->finish_reason(ev.finish_reason)
                                    : finish_reason_text(ev.finish_reason);
  ch["finish_reason"] = reason != nullptr ? json(reason) : json();
  if (ev.is_final) ch["stop_reason"] = stop_reason_json(ev);
  if (g_->is_chat) {
    ch["delta"] = std::move(delta);
    ch["logprobs"] = g_->wants_logprobs ? chat_logprobs_json(ev.token_ids, ev.logprobs,
                                                             g_->num_top_logprobs, token_text_)
                                        : json();
  } else {
    ch["text"] = ev.text;
    ch["logprobs"] = g_->wants_logprobs
                         ? completion_logprobs_json(ev.token_ids, ev.logprobs, g_->num_top_logprobs,
                                                    token_text_, &cs.text_offset)
                         : json();
  }
  json c = chunk_base();
  c["choices"] = json::array({std::move(ch)});
  if (g_->params.include_usage) c["usage"] = nullptr;
  *out += sse_frame(c);
}

void GenerationCall::finish_stream(std::string* out) {
  if (g_->params.include_usage) {
    json c = chunk_base();
    c["choices"] = json::array();
    c["usage"] = usage_json(usage_);
    *out += sse_frame(c);
  }
  *out += kDone;
}

void GenerationCall::send_body() {
  json out{{"id", g_->id},
           {"object", g_->is_chat ? "chat.completion" : "text_completion"},
           {"created", g_->created},
           {"model", g_->model}};
  json arr = json::array();
  for (int32_t i = 0; i < num_choices(); ++i) {
    Choice& c = choices_[i];
    json ch{{"index", i},
            {"finish_reason", finish_reason_text(c.finish_reason)},
            {"stop_reason", c.stop_reason}};
    if (c.output) c.output->check(c.text, c.finish_reason, !c.stop_reason.is_null());
    if (g_->is_chat) {
      if (c.reasoning.is_active()) {
        ReasoningSplit split =
            ReasoningParser::split(g_->reasoning_parser, g_->is_thinking_disabled, c.text);
        ch["message"] =
            json{{"role", "assistant"},
                 {"content", split.content ? json(*split.content) : json()},
                 {"reasoning_content", split.reasoning ? json(*split.reasoning) : json()}};
      } else if (c.output) {
        // Tool calls (output_constraint.h) parsed from the whole text.
        ch["message"] = c.output->message(c.text);
        ch["finish_reason"] = c.output->finish_reason(c.finish_reason);
      } else {
        ch["message"] = json{{"role", "assistant"}, {"content", c.text}};
      }
      ch["logprobs"] = g_->wants_logprobs ? chat_logprobs_json(c.token_ids, c.logprobs,
                                                               g_->num_top_logprobs, token_text_)
                                          : json();
    } else {
      const size_t p = static_cast<size_t>(i / g_->params.n);
      const std::string& echo = p < g_->echo_texts.size() ? g_->echo_texts[p] : std::string();
      ch["text"] = echo + c.text;
      size_t offset = echo.size();
      ch["logprobs"] = g_->wants_logprobs
                           ? completion_logprobs_json(c.token_ids, c.logprobs, g_->num_top_logprobs,
                                                      token_text_, &offset)
                           : json();
    }
    arr.push_back(std::move(ch));
  }
  out["choices"] = std::move(arr);
  out["usage"] = usage_json(usage_);
  response_->send(200, "application/json", dump_json(out));
}

}  // namespace strata::server
