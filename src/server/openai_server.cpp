#include "server/openai_server.h"

#include <httplib.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "server/connection_watchdog.h"
#include "server/openai_response.h"

namespace strata::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int64_t kNoDeadline = ConnectionWatchdog::kNoDeadline;

int64_t now_ns() {
  return ConnectionWatchdog::now_ns();
}

// Whether the request now served on this thread reached pre-routing (so
// its headers were read); an httplib 400 before that is a header failure.
thread_local bool t_is_routed = false;

// True when the peer closed or reset the connection.
bool is_peer_gone(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return true;
  if (p.revents & POLLIN) {
    char c;
    const ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0;
  }
  return false;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = b.size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

}  // namespace

// httplib's server with a deeper accept queue: httplib listens with a backlog
// of 5, so a burst of hundreds of connects overflows it and clients wait for
// SYN retransmits (1 s, 3 s, ...). Linux lets listen() be called again on a
// listening socket to change the backlog.
class HttpServer : public httplib::Server {
 public:
  void raise_backlog(int backlog) { ::listen(svr_sock_, backlog); }
};

// What one generation request needs from parsing to its last event.
struct Generation {
  bool is_chat = false;
  std::string id;
  int64_t created = 0;
  GenerationParams params;
  std::vector<int32_t> prompt_ids;
  std::string echo_text;         // completions with echo
  int32_t num_top_logprobs = 0;  // per token
  bool wants_logprobs = false;
};

// Per-choice accumulation.
struct ChoiceState {
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<SampleResult> logprobs;
  FinishReason finish_reason = FinishReason::kNone;
  bool is_final = false;
  bool sent_role = false;
  size_t text_offset = 0;  // completions logprobs: bytes emitted before
};

class OpenAiServer::Impl {
 public:
  Impl(OpenAiServer* owner, Engine& engine, const Tokenizer& tokenizer, ServerOptions options)
      : owner_(owner),
        engine_(engine),
        tokenizer_(tokenizer),
        options_(std::move(options)),
        watchdog_(options_.header_timeout_s, 250),
        token_text_([&tokenizer](int32_t id) {
          return tokenizer.decode(std::span<const int32_t>(&id, 1), false);
        }) {
    std::random_device rd;
    rng_state_ = (uint64_t{rd()} << 32) ^ rd() ^ static_cast<uint64_t>(now_ns());
    setup();
  }

  Status bind() {
    const int port = options_.port == 0
                         ? http_.bind_to_any_port(options_.host)
                         : (http_.bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port < 0) {
      return Status(StatusCode::kIoError, "serve: cannot listen on " + options_.host + ":" +
                                              std::to_string(options_.port) +
                                              " (in use? pick another --port)");
    }
    owner_->bound_port_ = port;
    http_.raise_backlog(4096);
    watchdog_.start(port);
    return Status::ok();
  }

  void serve() {
    std::thread logger;
    if (options_.log_interval_s > 0) logger = std::thread([this] { log_loop(); });
    http_.listen_after_bind();
    {
      std::lock_guard<std::mutex> lock(log_mu_);
      is_stopping_ = true;
    }
    log_cv_.notify_all();
    if (logger.joinable()) logger.join();
  }

  void begin_drain() { is_draining_ = true; }
  void stop() { http_.stop(); }

 private:
  // ---- helpers ---------------------------------------------------------
  uint64_t next_random() {
    std::lock_guard<std::mutex> lock(rng_mu_);
    uint64_t z = (rng_state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::string new_id(const char* prefix) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%s%016llx%08llx", prefix,
                  static_cast<unsigned long long>(next_random()),
                  static_cast<unsigned long long>(next_random() & 0xffffffffull));
    return buf;
  }
  static void send_error(httplib::Response& res, const ApiError& e) {
    res.status = e.http_status;
    res.set_content(e.body(), "application/json");
  }
  static void send_json(httplib::Response& res, const json& j) {
    res.status = 200;
    res.set_content(dump_json(j), "application/json");
  }
  bool model_ok(const GenerationParams& p) const {
    return p.model.empty() || p.model == options_.served_model_name;
  }

  // ---- routes ----------------------------------------------------------
  void setup() {
    http_.new_task_queue = [n = options_.num_http_threads] {
      return new httplib::ThreadPool(static_cast<size_t>(n));
    };
    http_.set_payload_max_length(options_.max_body_bytes);
    http_.set_read_timeout(options_.header_timeout_s, 0);
    http_.set_write_timeout(options_.write_timeout_s, 0);
    http_.set_keep_alive_timeout(options_.idle_timeout_s);
    http_.set_keep_alive_max_count(1000);
    http_.set_tcp_nodelay(true);

    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      t_is_routed = true;
      watchdog_.set_deadline(req.remote_addr, req.remote_port,
                             now_ns() + int64_t{options_.request_timeout_s} * 1000000000);
      if (!options_.api_key.empty() && req.path != "/health") {
        const std::string auth = req.get_header_value("Authorization");
        const std::string_view prefix = "Bearer ";
        const bool ok =
            auth.size() > prefix.size() && auth.compare(0, prefix.size(), prefix) == 0 &&
            constant_time_equal(std::string_view(auth).substr(prefix.size()), options_.api_key);
        if (!ok) {
          send_error(res, unauthorized());
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    http_.set_logger([this](const httplib::Request& req, const httplib::Response&) {
      t_is_routed = false;
      // The next request on this connection: idle wait, then its headers.
      watchdog_.set_deadline(
          req.remote_addr, req.remote_port,
          now_ns() + int64_t{options_.idle_timeout_s + options_.header_timeout_s} * 1000000000);
    });
    http_.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          ApiError e;
          if (res.status == 404) {
            e = route_not_found();
          } else if (res.status == 413) {
            e = body_too_large();
          } else if (res.status == 400 && !t_is_routed && !req.method.empty()) {
            e = headers_too_large();  // request line read, headers were not
          } else if (res.status == 405) {
            e = method_not_allowed();
          } else {
            e = invalid_param("", "Malformed HTTP request.");
            e.http_status = res.status;
          }
          send_error(res, e);
          return httplib::Server::HandlerResponse::Handled;
        }));
    http_.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
          send_error(res, internal_error("Internal server error."));
        });

    auto not_allowed = [](const httplib::Request&, httplib::Response& res) {
      send_error(res, method_not_allowed());
    };
    http_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
      if (is_draining_) {
        send_error(res, server_draining());
        return;
      }
      res.status = 200;
      res.set_content("{\"status\":\"ok\"}", "application/json");
    });
    http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.status = 200;
      res.set_content(engine_.metrics().to_prometheus_text(options_.served_model_name),
                      "text/plain; version=0.0.4");
    });
    http_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
      send_json(res, json{{"object", "list"}, {"data", json::array({model_card()})}});
    });
    http_.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.matches.size() < 2 || req.matches[1] != options_.served_model_name) {
        send_error(res, model_not_found());
        return;
      }
      send_json(res, model_card());
    });
    http_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      handle_generation(req, res, /*is_chat=*/false);
    });
    http_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      handle_generation(req, res, /*is_chat=*/true);
    });
    http_.Post("/tokenize", [this](const httplib::Request& req, httplib::Response& res) {
      handle_tokenize(req, res);
    });
    http_.Post("/detokenize", [this](const httplib::Request& req, httplib::Response& res) {
      handle_detokenize(req, res);
    });
    for (const char* p : {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}) {
      http_.Get(p, not_allowed);
      http_.Put(p, not_allowed);
      http_.Delete(p, not_allowed);
    }
    for (const char* p : {"/health", "/metrics", "/v1/models"}) {
      http_.Post(p, not_allowed);
      http_.Put(p, not_allowed);
      http_.Delete(p, not_allowed);
    }
  }

  json model_card() const {
    return json{{"id", options_.served_model_name},
                {"object", "model"},
                {"created", static_cast<int64_t>(started_at_)},
                {"owned_by", "strata"},
                {"max_model_len", options_.limits.max_model_len},
                {"vocab_size", tokenizer_.vocab_size()}};
  }

  // ---- tokenize ----------------------------------------------------------
  void handle_tokenize(const httplib::Request& req, httplib::Response& res) {
    json body;
    if (auto e = parse_json_body(req.body, options_.limits, &body)) return send_error(res, *e);
    TokenizeRequest tr;
    if (auto e = parse_tokenize_request(body, options_.limits, &tr)) return send_error(res, *e);
    std::vector<int32_t> ids;
    if (tr.prompt) {
      ids = tokenizer_.encode(*tr.prompt, tr.add_special_tokens, true);
    } else {
      ids = tokenizer_.encode(owner_->chat_template_.render(tr.messages, tr.add_generation_prompt),
                              tr.add_special_tokens, true);
    }
    send_json(res, json{{"count", ids.size()},
                        {"max_model_len", options_.limits.max_model_len},
                        {"tokens", ids}});
  }

  void handle_detokenize(const httplib::Request& req, httplib::Response& res) {
    json body;
    if (auto e = parse_json_body(req.body, options_.limits, &body)) return send_error(res, *e);
    DetokenizeRequest dr;
    if (auto e = parse_detokenize_request(body, options_.limits, &dr)) return send_error(res, *e);
    send_json(res, json{{"prompt", tokenizer_.decode(dr.tokens, false)}});
  }

  // ---- generation --------------------------------------------------------
  std::optional<ApiError> prepare(const httplib::Request& req, bool is_chat, Generation* g) {
    json body;
    if (auto e = parse_json_body(req.body, options_.limits, &body)) return e;
    g->is_chat = is_chat;
    g->created = static_cast<int64_t>(std::time(nullptr));
    if (is_chat) {
      ChatRequest cr;
      if (auto e = parse_chat_request(body, options_.limits, &cr)) return e;
      if (!model_ok(cr.params)) return model_not_found();
      g->params = std::move(cr.params);
      g->wants_logprobs = cr.logprobs;
      g->num_top_logprobs = cr.top_logprobs;
      g->prompt_ids = tokenizer_.encode(
          owner_->chat_template_.render(cr.messages, cr.add_generation_prompt), true, true);
      g->id = new_id("chatcmpl-");
    } else {
      CompletionRequest cr;
      if (auto e = parse_completion_request(body, options_.limits, &cr)) return e;
      if (!model_ok(cr.params)) return model_not_found();
      g->params = std::move(cr.params);
      if (cr.prompt_text) {
        g->prompt_ids = tokenizer_.encode(*cr.prompt_text, true, true);
        if (cr.echo) g->echo_text = *cr.prompt_text;
      } else {
        g->prompt_ids = std::move(*cr.prompt_ids);
        if (cr.echo) g->echo_text = tokenizer_.decode(g->prompt_ids, false);
      }
      g->wants_logprobs = cr.logprobs.has_value();
      g->num_top_logprobs = cr.logprobs.value_or(0);
      g->id = new_id("cmpl-");
    }
    if (g->prompt_ids.empty())
      return invalid_param(is_chat ? "messages" : "prompt",
                           "The prompt is empty after tokenization.");
    return resolve_max_tokens(static_cast<int64_t>(g->prompt_ids.size()), is_chat ? 0 : 16,
                              is_chat ? "messages" : "prompt", options_.limits, &g->params);
  }

  GenerationRequest to_engine_request(const Generation& g) {
    GenerationRequest r;
    r.prompt_tokens = g.prompt_ids;
    const GenerationParams& p = g.params;
    r.sampling.temperature = p.temperature;
    r.sampling.top_k = p.top_k;
    r.sampling.top_p = p.top_p;
    r.sampling.min_p = p.min_p;
    r.sampling.repetition_penalty = p.repetition_penalty;
    r.sampling.presence_penalty = p.presence_penalty;
    r.sampling.frequency_penalty = p.frequency_penalty;
    r.sampling.logit_bias = p.logit_bias;
    r.sampling.seed = p.seed ? *p.seed : next_random();
    r.sampling.num_logprobs = g.wants_logprobs ? std::max(1, g.num_top_logprobs) : 0;
    r.max_tokens = *p.max_tokens;
    r.min_tokens = p.min_tokens;
    r.stop = p.stop;
    r.ignore_eos = p.ignore_eos;
    r.n = p.n;
    r.priority = p.priority;
    r.cache_salt = p.cache_salt;
    return r;
  }

  // Releases the admission slot and aborts the engine request unless it ended.
  struct Admission {
    Impl* impl;
    std::shared_ptr<RequestStream> stream;
    bool is_finished = false;
    bool is_released = false;
    // Frees the admission slot as soon as the engine is done with the
    // request, before its last bytes are written, so a client that sends its
    // next request right after [DONE] finds the slot free.
    void finish() {
      is_finished = true;
      if (!is_released) impl->owner_->num_in_flight_.fetch_sub(1);
      is_released = true;
    }
    ~Admission() {
      if (stream && !is_finished) impl->engine_.abort(stream->id());
      if (!is_released) impl->owner_->num_in_flight_.fetch_sub(1);
    }
  };

  void handle_generation(const httplib::Request& req, httplib::Response& res, bool is_chat) {
    watchdog_.set_deadline(req.remote_addr, req.remote_port, kNoDeadline);
    if (is_draining_) return send_error(res, server_draining());
    auto g = std::make_shared<Generation>();
    if (auto e = prepare(req, is_chat, g.get())) return send_error(res, *e);
    GenerationRequest er = to_engine_request(*g);
    if (Status s = er.sampling.validate(options_.limits.vocab_size); !s.is_ok()) {
      return send_error(res, invalid_param("", s.message()));
    }
    const int64_t cap = int64_t{engine_.options().max_num_seqs} + options_.max_queue;
    if (owner_->num_in_flight_.fetch_add(1) >= cap) {
      owner_->num_in_flight_.fetch_sub(1);
      return send_error(res, queue_full());
    }
    auto admission = std::make_shared<Admission>();
    admission->impl = this;
    Result<std::shared_ptr<RequestStream>> stream = engine_.add_request(std::move(er));
    if (!stream) {
      return send_error(res, engine_error(stream.status().code(), stream.status().message()));
    }
    admission->stream = *stream;
    const int fd = watchdog_.find_fd(req.remote_addr, req.remote_port);
    if (g->params.stream) {
      res.status = 200;
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Accel-Buffering", "no");
      auto choices = std::make_shared<std::vector<ChoiceState>>(g->params.n);
      res.set_chunked_content_provider(
          "text/event-stream", [this, g, admission, choices, fd](size_t, httplib::DataSink& sink) {
            return stream_events(*g, *admission, *choices, fd, sink);
          });
      return;
    }
    std::vector<ChoiceState> choices(g->params.n);
    TokenUsage usage;
    size_t num_open = choices.size();
    while (num_open > 0) {
      std::optional<TokenEvent> ev = admission->stream->pop_for(std::chrono::milliseconds(50));
      if (!ev) {
        if (admission->stream->is_done()) break;
        if (is_peer_gone(fd)) return;  // Admission aborts the request
        continue;
      }
      if (ev->choice_index < 0 || ev->choice_index >= static_cast<int32_t>(choices.size())) {
        continue;
      }
      ChoiceState& c = choices[ev->choice_index];
      c.text += ev->text;
      c.token_ids.insert(c.token_ids.end(), ev->token_ids.begin(), ev->token_ids.end());
      c.logprobs.insert(c.logprobs.end(), ev->logprobs.begin(), ev->logprobs.end());
      if (ev->is_final) {
        c.is_final = true;
        c.finish_reason = ev->finish_reason;
        --num_open;
        usage.num_prompt_tokens = ev->usage.num_prompt_tokens;
        usage.num_output_tokens += ev->usage.num_output_tokens;
        if (ev->choice_index == 0)
          usage.num_cached_prompt_tokens = ev->usage.num_cached_prompt_tokens;
        if (ev->finish_reason == FinishReason::kError ||
            ev->finish_reason == FinishReason::kAbort) {
          admission->is_finished = num_open == 0;
          return send_error(res, final_event_error(*ev));
        }
      }
    }
    admission->finish();
    json out{{"id", g->id},
             {"object", is_chat ? "chat.completion" : "text_completion"},
             {"created", g->created},
             {"model", options_.served_model_name}};
    json arr = json::array();
    for (size_t i = 0; i < choices.size(); ++i) {
      const ChoiceState& c = choices[i];
      json ch{{"index", i}, {"finish_reason", finish_reason_text(c.finish_reason)}};
      if (is_chat) {
        ch["message"] = json{{"role", "assistant"}, {"content", c.text}};
        ch["logprobs"] = g->wants_logprobs ? chat_logprobs_json(c.token_ids, c.logprobs,
                                                                g->num_top_logprobs, token_text_)
                                           : json();
      } else {
        ch["text"] = g->echo_text + c.text;
        size_t offset = g->echo_text.size();
        ch["logprobs"] = g->wants_logprobs
                             ? completion_logprobs_json(c.token_ids, c.logprobs,
                                                        g->num_top_logprobs, token_text_, &offset)
                             : json();
      }
      arr.push_back(std::move(ch));
    }
    out["choices"] = std::move(arr);
    out["usage"] = usage_json(usage);
    send_json(res, out);
  }

  // The error a choice's final kError / kAbort event stands for.
  static ApiError final_event_error(const TokenEvent& e) {
    if (e.finish_reason == FinishReason::kAbort) {
      return engine_error(StatusCode::kResourceExhausted, "The request was aborted.");
    }
    return engine_error(e.error_code, e.error_message.empty() ? "request failed" : e.error_message);
  }

  // One SSE event; false when the client is gone.
  static bool write_sse(httplib::DataSink& sink, const json& j) {
    const std::string frame = sse_frame(j);
    return sink.write(frame.data(), frame.size());
  }

  json chunk_base(const Generation& g) const {
    return json{{"id", g.id},
                {"object", g.is_chat ? "chat.completion.chunk" : "text_completion"},
                {"created", g.created},
                {"model", options_.served_model_name}};
  }

  // Runs the whole SSE stream inside one content-provider call.
  bool stream_events(const Generation& g, Admission& adm, std::vector<ChoiceState>& choices, int fd,
                     httplib::DataSink& sink) {
    const bool usage_chunks = g.params.include_usage;
    // Chat: the role first, for every choice.
    for (size_t i = 0; i < choices.size(); ++i) {
      json c = chunk_base(g);
      json ch{{"index", i}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
      if (g.is_chat) {
        ch["delta"] = json{{"role", "assistant"}, {"content", ""}};
      } else {
        if (g.echo_text.empty()) continue;
        ch["text"] = g.echo_text;
      }
      c["choices"] = json::array({std::move(ch)});
      if (usage_chunks) c["usage"] = nullptr;
      if (!write_sse(sink, c)) return false;
    }
    TokenUsage usage;
    size_t num_open = choices.size();
    while (num_open > 0) {
      std::optional<TokenEvent> ev = adm.stream->pop_for(std::chrono::milliseconds(50));
      if (!ev) {
        if (adm.stream->is_done()) break;
        if (is_peer_gone(fd)) return false;  // Admission aborts the request
        continue;
      }
      if (ev->choice_index < 0 || ev->choice_index >= static_cast<int32_t>(choices.size())) {
        continue;
      }
      ChoiceState& cs = choices[ev->choice_index];
      if (ev->is_final) {
        --num_open;
        usage.num_prompt_tokens = ev->usage.num_prompt_tokens;
        usage.num_output_tokens += ev->usage.num_output_tokens;
        if (ev->choice_index == 0)
          usage.num_cached_prompt_tokens = ev->usage.num_cached_prompt_tokens;
        if (ev->finish_reason == FinishReason::kError ||
            ev->finish_reason == FinishReason::kAbort) {
          adm.is_finished = num_open == 0;
          write_sse(sink, final_event_error(*ev).to_json());
          return false;
        }
      }
      if (ev->text.empty() && !ev->is_final && !g.wants_logprobs) continue;
      json c = chunk_base(g);
      json ch{{"index", ev->choice_index}};
      const char* reason = ev->is_final ? finish_reason_text(ev->finish_reason) : nullptr;
      ch["finish_reason"] = reason != nullptr ? json(reason) : json();
      if (g.is_chat) {
        ch["delta"] =
            ev->is_final && ev->text.empty() ? json::object() : json{{"content", ev->text}};
        ch["logprobs"] = g.wants_logprobs ? chat_logprobs_json(ev->token_ids, ev->logprobs,
                                                               g.num_top_logprobs, token_text_)
                                          : json();
      } else {
        ch["text"] = ev->text;
        ch["logprobs"] = g.wants_logprobs ? completion_logprobs_json(ev->token_ids, ev->logprobs,
                                                                     g.num_top_logprobs,
                                                                     token_text_, &cs.text_offset)
                                          : json();
      }
      c["choices"] = json::array({std::move(ch)});
      if (usage_chunks) c["usage"] = nullptr;
      if (!write_sse(sink, c)) return false;
    }
    adm.finish();
    if (usage_chunks) {
      json c = chunk_base(g);
      c["choices"] = json::array();
      c["usage"] = usage_json(usage);
      if (!write_sse(sink, c)) return false;
    }
    static const char kDone[] = "data: [DONE]\n\n";
    if (!sink.write(kDone, sizeof(kDone) - 1)) return false;
    sink.done();
    return true;
  }

  // ---- periodic log ------------------------------------------------------
  void log_loop() {
    MetricsSnapshot prev = engine_.metrics().snapshot();
    Clock::time_point prev_t = Clock::now();
    std::unique_lock<std::mutex> lock(log_mu_);
    while (!is_stopping_) {
      log_cv_.wait_for(lock, std::chrono::duration<double>(options_.log_interval_s));
      if (is_stopping_) break;
      const MetricsSnapshot s = engine_.metrics().snapshot();
      const Clock::time_point t = Clock::now();
      const double dt = std::chrono::duration<double>(t - prev_t).count();
      const bool is_idle = s.num_requests_running == 0 && s.num_requests_waiting == 0 &&
                           s.generation_tokens == prev.generation_tokens &&
                           s.prompt_tokens == prev.prompt_tokens;
      if (is_idle) {
        prev_t = t;
        continue;  // nothing to report
      }
      const int64_t queries = s.prefix_cache_queries_tokens - prev.prefix_cache_queries_tokens;
      const int64_t hits = s.prefix_cache_hits_tokens - prev.prefix_cache_hits_tokens;
      std::fprintf(stderr,
                   "[serve] prompt %.1f tok/s, generation %.1f tok/s, running %lld, waiting %lld, "
                   "http in flight %lld, KV usage %.1f%%, prefix hit rate %.1f%%\n",
                   dt > 0 ? (s.prompt_tokens - prev.prompt_tokens) / dt : 0.0,
                   dt > 0 ? (s.generation_tokens - prev.generation_tokens) / dt : 0.0,
                   static_cast<long long>(s.num_requests_running),
                   static_cast<long long>(s.num_requests_waiting),
                   static_cast<long long>(owner_->num_in_flight_.load()), 100.0 * s.kv_cache_usage,
                   queries > 0 ? 100.0 * hits / queries : 0.0);
      prev = s;
      prev_t = t;
    }
  }

  OpenAiServer* owner_;
  Engine& engine_;
  const Tokenizer& tokenizer_;
  ServerOptions options_;
  HttpServer http_;
  ConnectionWatchdog watchdog_;
  TokenTextFn token_text_;
  std::atomic<bool> is_draining_{false};
  std::time_t started_at_ = std::time(nullptr);
  std::mutex rng_mu_;
  uint64_t rng_state_ = 0;
  std::mutex log_mu_;
  std::condition_variable log_cv_;
  bool is_stopping_ = false;
};

OpenAiServer::OpenAiServer(Engine& engine, const Tokenizer& tokenizer, ServerOptions options) {
  options.limits.vocab_size = tokenizer.vocab_size();
  options.limits.max_model_len = engine.max_model_len();
  chat_template_ = ChatTemplate::detect(tokenizer.chat_template());
  impl_ = std::make_unique<Impl>(this, engine, tokenizer, std::move(options));
}

OpenAiServer::~OpenAiServer() = default;

Status OpenAiServer::bind() {
  return impl_->bind();
}
void OpenAiServer::serve() {
  impl_->serve();
}
void OpenAiServer::begin_drain() {
  impl_->begin_drain();
}
void OpenAiServer::stop() {
  impl_->stop();
}

}  // namespace strata::server
