#include "server/openai_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "http/http_server.h"
#include "server/api_error.h"
#include "server/event_pump.h"
#include "server/generation_call.h"
#include "server/openai_response.h"
#include "server/output_constraint.h"
#include "server/probe_route.h"
#include "server/prompt_builder.h"

namespace strata::server {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = b.size();
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

http::HttpReply reply_of(const ApiError& e) {
  http::HttpReply r;
  r.status = e.http_status;
  r.content_type = "application/json";
  r.body = e.body();
  return r;
}

void send_error(const http::ResponsePtr& res, const ApiError& e) {
  res->send(e.http_status, "application/json", e.body());
}

void send_json(const http::ResponsePtr& res, const json& j) {
  res->send(200, "application/json", dump_json(j));
}

http::HttpServerOptions http_options(const ServerOptions& o) {
  http::HttpServerOptions h;
  h.host = o.host;
  h.port = static_cast<uint16_t>(o.port);
  h.num_io_threads = std::max(1, o.num_http_threads);
  h.num_worker_threads = std::max(1, o.num_worker_threads);
  h.max_connections = static_cast<size_t>(std::max(1, o.max_connections));
  h.max_body_bytes = o.max_body_bytes;
  h.header_timeout = seconds(o.header_timeout_s);
  h.body_timeout = seconds(o.request_timeout_s);
  h.idle_timeout = seconds(o.idle_timeout_s);
  h.write_timeout = seconds(o.write_timeout_s);
  h.error_formatter = [](const http::HttpError& e) {
    return reply_of(transport_error(e.status, e.message));
  };
  if (!o.api_key.empty()) {
    h.head_hook = [key =
                       o.api_key](const http::HttpRequest& req) -> std::optional<http::HttpReply> {
      if (req.path == "/health") return std::nullopt;
      const std::string_view auth = req.header("Authorization").value_or("");
      const std::string_view prefix = "Bearer ";
      const bool ok = auth.size() > prefix.size() && auth.substr(0, prefix.size()) == prefix &&
                      constant_time_equal(auth.substr(prefix.size()), key);
      if (ok) return std::nullopt;
      return reply_of(unauthorized());
    };
  }
  return h;
}

}  // namespace

class OpenAiServer::Impl {
 public:
  Impl(OpenAiServer* owner, Engine& engine, const Tokenizer& tokenizer, ServerOptions options)
      : engine_(engine),
        tokenizer_(tokenizer),
        options_(std::move(options)),
        prompts_(tokenizer, *owner->chat_template_),
        token_text_([&tokenizer](int32_t id) {
          return tokenizer.decode(std::span<const int32_t>(&id, 1), false);
        }),
        pump_(std::make_shared<EventPump>(options_.num_stream_threads)),
        http_(http_options(options_), routes()) {
    init_output_constraints(tokenizer);  // structured outputs / tools
    std::random_device rd;
    rng_state_ = (uint64_t{rd()} << 32) ^ rd() ^
                 static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  }

  ~Impl() {
    stop();
    join_drain_thread();
    http_.stop();
    pump_->stop();
    // Calls still held release their slots as they die, outside calls_mu_.
    std::unordered_map<uint64_t, std::shared_ptr<GenerationCall>> calls;
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      calls.swap(calls_);
    }
    calls.clear();
  }

  Status bind() { return http_.bind(); }
  int port() const { return http_.port(); }

  void serve() {
    if (Status s = http_.start(); !s.is_ok()) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return;
    }
    std::thread logger;
    if (options_.log_interval_s > 0) logger = std::thread([this] { log_loop(); });
    {
      std::unique_lock<std::mutex> lock(state_mu_);
      state_cv_.wait(lock, [this] { return is_stopping_; });
    }
    join_drain_thread();
    state_cv_.notify_all();
    if (logger.joinable()) logger.join();
    // Aborted requests' final frames go out before the connections close.
    abort_all();
    wait_in_flight(milliseconds(1000));
    http_.stop_accepting();
    const auto deadline = Clock::now() + milliseconds(2000);
    while (http_.stats().num_active_requests > 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    http_.stop();
    pump_->stop();
  }

  void begin_drain() {
    if (!is_draining_.exchange(true)) http_.stop_accepting();
  }

  int64_t drain(milliseconds timeout) {
    begin_drain();
    wait_in_flight(timeout);
    const int64_t num_aborted = abort_all();
    wait_in_flight(milliseconds(2000));
    return num_aborted;
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      is_stopping_ = true;
    }
    state_cv_.notify_all();
  }

  int64_t num_in_flight() const { return num_in_flight_.load(); }

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
  bool model_ok(const GenerationParams& p) const {
    return p.model.empty() || p.model == options_.served_model_name;
  }

  // Aborts every request in flight; returns how many.
  int64_t abort_all() {
    std::vector<std::shared_ptr<GenerationCall>> calls;
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      for (auto& [id, call] : calls_) calls.push_back(call);
    }
    for (auto& c : calls) c->abort();
    return static_cast<int64_t>(calls.size());
  }

  void wait_in_flight(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(calls_mu_);
    calls_cv_.wait_for(lock, timeout, [this] { return calls_.empty(); });
  }

  // ---- routes ----------------------------------------------------------
  http::Router routes() {
    using http::RunOn;
    http::Router r;
    r.add("GET", "/health", [this](http::HttpRequest, http::ResponsePtr res) {
      if (is_draining_) return send_error(res, server_draining());
      res->send(200, "application/json", "{\"status\":\"ok\"}");
    });
    r.add("GET", "/metrics", [this](http::HttpRequest, http::ResponsePtr res) {
      res->send(200, "text/plain; version=0.0.4",
                engine_.metrics().to_prometheus_text(options_.served_model_name) +
                    structured_output_metrics_text(structured_.get(), options_.served_model_name) +
                    (options_.extra_metrics_text ? options_.extra_metrics_text() : std::string()));
    });
    r.add("GET", "/v1/models", [this](http::HttpRequest, http::ResponsePtr res) {
      send_json(res, json{{"object", "list"}, {"data", json::array({model_card()})}});
    });
    r.add_prefix("GET", "/v1/models/", [this](http::HttpRequest req, http::ResponsePtr res) {
      if (req.path_param != options_.served_model_name) return send_error(res, model_not_found());
      send_json(res, model_card());
    });
    r.add(
        "POST", "/v1/completions",
        [this](http::HttpRequest req, http::ResponsePtr res) {
          handle_generation(req, std::move(res), /*is_chat=*/false);
        },
        RunOn::kWorker);
    r.add(
        "POST", "/v1/chat/completions",
        [this](http::HttpRequest req, http::ResponsePtr res) {
          handle_generation(req, std::move(res), /*is_chat=*/true);
        },
        RunOn::kWorker);
    r.add(
        "POST", "/tokenize",
        [this](http::HttpRequest req, http::ResponsePtr res) { handle_tokenize(req, res); },
        RunOn::kWorker);
    r.add(
        std::string("POST"), std::string(kProbePath),
        [this](http::HttpRequest req, http::ResponsePtr res) {
          res->send(handle_probe(engine_, req.body));
        },
        RunOn::kWorker);
    r.add(
        "POST", "/strata/v1/drain",
        [this](http::HttpRequest req, http::ResponsePtr res) { handle_drain(req, res); },
        RunOn::kWorker);
    r.add(
        "POST", "/detokenize",
        [this](http::HttpRequest req, http::ResponsePtr res) { handle_detokenize(req, res); },
        RunOn::kWorker);
    return r;
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
  void handle_tokenize(const http::HttpRequest& req, const http::ResponsePtr& res) {
    nlohmann::ordered_json body;
    if (auto e = parse_json_body(req.body, options_.limits, &body)) return send_error(res, *e);
    TokenizeRequest tr;
    if (auto e = parse_tokenize_request(body, options_.limits, &tr)) return send_error(res, *e);
    std::vector<int32_t> ids;
    if (auto e = prompts_.tokenize(tr, &ids)) return send_error(res, *e);
    send_json(res, json{{"count", ids.size()},
                        {"max_model_len", options_.limits.max_model_len},
                        {"tokens", ids}});
  }

  void handle_detokenize(const http::HttpRequest& req, const http::ResponsePtr& res) {
    json body;
    if (auto e = parse_json_body(req.body, options_.limits, &body)) return send_error(res, *e);
    DetokenizeRequest dr;
    if (auto e = parse_detokenize_request(body, options_.limits, &dr)) return send_error(res, *e);
    send_json(res, json{{"prompt", tokenizer_.decode(dr.tokens, false)}});
  }

  // ---- drain with migration ---------------------------------------------
  void join_drain_thread() {
    std::thread t;
    {
      std::lock_guard<std::mutex> lock(drain_mu_);
      t = std::move(drain_thread_);
    }
    if (t.joinable()) t.join();
  }

  // POST /strata/v1/drain {"migrate": bool, "timeout_s": number}: stops
  // admitting (503, /health 503, the listener closes), exports every running
  // request a router sent (their responses end with the migration record,
  // and the router continues them elsewhere), lets the others finish for at
  // most timeout_s, waits for the migrated requests' KV to be pulled (same
  // deadline) and stops the server. Once; a second call reports the drain.
  void handle_drain(const http::HttpRequest& req, const http::ResponsePtr& res) {
    json body = json::object();
    if (!req.body.empty()) {
      if (auto e = parse_json_body(req.body, options_.limits, &body)) return send_error(res, *e);
    }
    if (!body.is_object()) return send_error(res, invalid_param("", "The body must be an object."));
    bool migrate = false;
    double timeout_s = 30.0;
    for (const auto& [key, value] : body.items()) {
      if (key == "migrate") {
        if (!value.is_boolean())
          return send_error(res, invalid_param("migrate", "must be a boolean."));
        migrate = value.get<bool>();
      } else if (key == "timeout_s") {
        if (!value.is_number() || !(value.get<double>() > 0.0 && value.get<double>() <= 3600.0)) {
          return send_error(res, invalid_param("timeout_s", "must be a number in (0, 3600]."));
        }
        timeout_s = value.get<double>();
      } else {
        return send_error(res, invalid_param(key, "Unrecognized drain argument."));
      }
    }
    if (drain_requested_.exchange(true)) {
      return send_json(res, json{{"status", "draining"}, {"migrating", nullptr}});
    }
    begin_drain();
    int64_t num_migrating = 0;
    const std::string peer =
        migrate && options_.migration_kv_peer ? options_.migration_kv_peer() : std::string();
    // Requests past the draining check but not yet in calls_ (the engine
    // may be running them already) enter it within moments: wait for them.
    for (int i = 0; i < 5000 && num_admitting_.load() > 0; ++i) {
      std::this_thread::sleep_for(milliseconds(1));
    }
    std::vector<std::shared_ptr<GenerationCall>> calls;
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      for (auto& [id, call] : calls_) calls.push_back(call);
    }
    if (!peer.empty()) {
      for (auto& c : calls) num_migrating += c->migrate(peer) ? 1 : 0;
    }
    std::fprintf(stderr, "[serve] drain: migrating %lld of %zu requests (kv %s)\n",
                 static_cast<long long>(num_migrating), calls.size(),
                 peer.empty() ? "none" : peer.c_str());
    send_json(res, json{{"status", "draining"}, {"migrating", num_migrating}});
    const auto timeout =
        std::chrono::duration_cast<milliseconds>(std::chrono::duration<double>(timeout_s));
    std::lock_guard<std::mutex> lock(drain_mu_);
    drain_thread_ = std::thread([this, num_migrating, timeout] {
      const auto deadline = Clock::now() + timeout;
      wait_in_flight(timeout);
      abort_all();
      wait_in_flight(milliseconds(2000));
      if (num_migrating > 0 && options_.wait_kv_pulled) {
        options_.wait_kv_pulled(num_migrating, deadline);
      }
      std::fprintf(stderr, "[serve] drain done\n");
      stop();
    });
  }

  // ---- generation --------------------------------------------------------
  std::optional<ApiError> prepare(const http::HttpRequest& req, bool is_chat, Generation* g) {
    nlohmann::ordered_json body;  // ordered: the chat template sees the client's key order
    if (auto e = parse_json_body(req.body, options_.limits, &body)) return e;
    // Migration: a router continuing a request another worker ran.
    std::shared_ptr<const ResumeState> resume;
    if (body.is_object() && body.contains("strata_resume")) {
      Result<ResumeState> r = resume_state_from_json(json(body["strata_resume"]));
      if (!r) return invalid_param("strata_resume", r.status().message());
      resume = std::make_shared<const ResumeState>(std::move(*r));
      body.erase("strata_resume");
    }
    BuiltPrompt built;
    if (auto e =
            prompts_.build(body, is_chat, options_.limits, options_.served_model_name, &built)) {
      return e;
    }
    g->is_chat = is_chat;
    g->created = static_cast<int64_t>(std::time(nullptr));
    g->model = options_.served_model_name;
    g->id = new_id(is_chat ? "chatcmpl-" : "cmpl-");
    g->params = std::move(built.params);
    g->prompt_ids = std::move(built.prompts);
    g->echo_texts = std::move(built.echo_texts);
    g->wants_logprobs = built.wants_logprobs;
    g->num_top_logprobs = built.num_top_logprobs;
    if (is_chat) {
      g->reasoning_parser = options_.reasoning_parser;
      g->is_thinking_disabled = built.is_thinking_disabled;
    }
    // Structured outputs and tools: the grammar and the tool-call parsing.
    auto constraint = std::make_shared<OutputConstraint>();
    if (auto e = prepare_output_constraint(body, req.body, is_chat, structured_, tool_format_,
                                           constraint.get())) {
      return e;
    }
    if (constraint->grammar || constraint->tools) g->constraint = std::move(constraint);
    if (g->params.priority != 0 && engine_.options().policy == SchedulingPolicy::kFcfs) {
      return invalid_param("priority", "priority needs --policy priority (the server runs fcfs).");
    }
    // max_tokens defaults to what the longest prompt leaves room for.
    size_t longest = 0;
    for (const auto& p : g->prompt_ids) longest = std::max(longest, p.size());
    if (auto e = resolve_max_tokens(static_cast<int64_t>(longest), is_chat ? 0 : 16,
                                    is_chat ? "messages" : "prompt", options_.limits, &g->params)) {
      return e;
    }
    const bool is_plain = g->prompt_ids.size() == 1 && g->params.n == 1 && !g->wants_logprobs &&
                          (g->echo_texts.empty() || g->echo_texts.front().empty()) &&
                          g->reasoning_parser == ReasoningParserKind::kNone && !g->constraint;
    g->is_migratable = is_plain && static_cast<bool>(options_.migration_kv_peer) &&
                       req.header("x-strata-migratable").value_or("") == "1";
    if (resume) {
      if (!is_plain) {
        return invalid_param("strata_resume",
                             "A migrated request is one plain choice (n 1, one prompt, no echo, "
                             "logprobs, reasoning parser or output constraint).");
      }
      if (resume->prompt_tokens != g->prompt_ids.front()) {
        return invalid_param("strata_resume", "prompt_token_ids differ from the request's prompt.");
      }
      if (static_cast<int64_t>(resume->output_tokens.size()) >= *g->params.max_tokens) {
        return invalid_param("strata_resume", "as many output tokens as max_tokens already.");
      }
      for (int32_t t : resume->output_tokens) {
        if (t >= options_.limits.vocab_size) {
          return invalid_param("strata_resume",
                               "output_token_ids hold an id beyond the vocabulary.");
        }
      }
      if (!resume->response_id.empty()) g->id = resume->response_id;
      if (resume->created > 0) g->created = resume->created;
      g->resume = std::move(resume);
    }
    return std::nullopt;
  }

  GenerationRequest to_engine_request(const Generation& g, size_t prompt) {
    GenerationRequest r;
    r.prompt_tokens = g.prompt_ids[prompt];
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
    r.stop_token_ids = p.stop_token_ids;
    r.include_stop_str_in_output = p.include_stop_str_in_output;
    r.skip_special_tokens = p.skip_special_tokens;
    r.n = p.n;
    r.priority = p.priority;
    r.cache_salt = p.cache_salt;
    if (g.constraint) r.grammar = g.constraint->grammar;  // structured outputs / tools
    r.resume = g.resume;
    return r;
  }

  void handle_generation(const http::HttpRequest& req, http::ResponsePtr res, bool is_chat) {
    // Counted from before the draining check until the call is in calls_,
    // so a drain sees every request admitted before it (both atomics are
    // sequentially consistent: the check sees the drain, or the drain this).
    struct Admitting {
      std::atomic<int64_t>& n;
      explicit Admitting(std::atomic<int64_t>& count) : n(count) { n.fetch_add(1); }
      ~Admitting() { n.fetch_sub(1); }
    } admitting(num_admitting_);
    if (is_draining_) return send_error(res, server_draining());
    auto g = std::make_shared<Generation>();
    if (auto e = prepare(req, is_chat, g.get())) return send_error(res, *e);
    std::vector<GenerationRequest> requests;
    for (size_t p = 0; p < g->prompt_ids.size(); ++p) {
      requests.push_back(to_engine_request(*g, p));
      if (Status s = requests.back().sampling.validate(options_.limits.vocab_size); !s.is_ok()) {
        return send_error(res, invalid_param("", s.message()));
      }
    }
    const int64_t cap = int64_t{engine_.options().max_num_seqs} + options_.max_queue;
    if (num_in_flight_.fetch_add(1) >= cap) {
      num_in_flight_.fetch_sub(1);
      return send_error(res, queue_full());
    }
    const uint64_t key = next_call_key_.fetch_add(1);
    auto call = std::make_shared<GenerationCall>(
        engine_, token_text_, g, res, [this] { num_in_flight_.fetch_sub(1); },
        [this, key] {
          std::lock_guard<std::mutex> lock(calls_mu_);
          calls_.erase(key);
          if (calls_.empty()) calls_cv_.notify_all();
        });
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (GenerationRequest& r : requests) {
      Result<std::shared_ptr<RequestStream>> stream = engine_.add_request(std::move(r));
      if (!stream) {
        for (const auto& s : streams) engine_.abort(s->id());
        return send_error(res, engine_error(stream.status().code(), stream.status().message()));
        // `call` dies here unstarted and releases its slot.
      }
      streams.push_back(std::move(*stream));
    }
    if (g->resume && options_.on_migration) options_.on_migration(false);
    if (g->is_migratable && options_.on_migration) {
      call->on_migrated = [f = options_.on_migration] { f(true); };
    }
    {
      std::lock_guard<std::mutex> lock(calls_mu_);
      calls_.emplace(key, call);
    }
    call->start(std::move(streams), pump_);
  }

  // ---- structured outputs and tools (server/output_constraint.h) ----------
  void init_output_constraints(const Tokenizer& tokenizer) {
    structured_ = std::make_shared<StructuredOutputCompiler>(TokenTrie::from_tokenizer(tokenizer),
                                                             GrammarCache::Options{});
    Result<ToolCallFormat> f =
        resolve_tool_call_format(options_.tool_call_parser, tokenizer.chat_template());
    if (!f.is_ok())
      std::fprintf(stderr, "[serve] %s; using hermes\n", f.status().message().c_str());
    tool_format_ = f.is_ok() ? f.value() : ToolCallFormat::kHermes;
  }

  // ---- periodic log ------------------------------------------------------
  void log_loop() {
    MetricsSnapshot prev = engine_.metrics().snapshot();
    Clock::time_point prev_t = Clock::now();
    std::unique_lock<std::mutex> lock(state_mu_);
    while (!is_stopping_) {
      state_cv_.wait_for(lock, std::chrono::duration<double>(options_.log_interval_s));
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
                   static_cast<long long>(num_in_flight_.load()), 100.0 * s.kv_cache_usage,
                   queries > 0 ? 100.0 * hits / queries : 0.0);
      prev = s;
      prev_t = t;
    }
  }

  Engine& engine_;
  const Tokenizer& tokenizer_;
  ServerOptions options_;
  PromptBuilder prompts_;
  TokenTextFn token_text_;
  std::atomic<bool> is_draining_{false};
  std::atomic<int64_t> num_in_flight_{0};
  std::time_t started_at_ = std::time(nullptr);
  std::mutex rng_mu_;
  uint64_t rng_state_ = 0;
  std::shared_ptr<StructuredOutputCompiler> structured_;  // one grammar cache per server
  ToolCallFormat tool_format_ = ToolCallFormat::kHermes;

  // In-flight generation calls, owned here until the engine is done with them.
  std::mutex calls_mu_;
  std::condition_variable calls_cv_;
  std::unordered_map<uint64_t, std::shared_ptr<GenerationCall>> calls_;
  std::atomic<uint64_t> next_call_key_{0};
  std::atomic<int64_t> num_admitting_{0};  // in handle_generation, not yet in calls_

  std::mutex state_mu_;
  std::condition_variable state_cv_;
  bool is_stopping_ = false;
  std::atomic<bool> drain_requested_{false};  // POST /strata/v1/drain, once
  std::mutex drain_mu_;                       // guards drain_thread_
  std::thread drain_thread_;

  // Declared last: destroyed first, so no handler or pump task outlives the
  // state above. The pump goes after the server (its tasks write to
  // responses the server owns the connections of). Shared with the streams'
  // listeners (weakly), which the engine thread may still call while this
  // server is destroyed: the engine outlives it.
  std::shared_ptr<EventPump> pump_;
  http::HttpServer http_;
};

OpenAiServer::OpenAiServer(Engine& engine, const Tokenizer& tokenizer, ServerOptions options) {
  options.limits.vocab_size = tokenizer.vocab_size();
  options.limits.max_model_len = engine.max_model_len();
  chat_template_ = chat_template_or_model(options.chat_template, tokenizer);
  impl_ = std::make_unique<Impl>(this, engine, tokenizer, std::move(options));
}

OpenAiServer::~OpenAiServer() = default;

Status OpenAiServer::bind() {
  return impl_->bind();
}
int OpenAiServer::port() const {
  return impl_->port();
}
void OpenAiServer::serve() {
  impl_->serve();
}
void OpenAiServer::begin_drain() {
  impl_->begin_drain();
}
int64_t OpenAiServer::drain(std::chrono::milliseconds timeout) {
  return impl_->drain(timeout);
}
void OpenAiServer::stop() {
  impl_->stop();
}
int64_t OpenAiServer::num_in_flight() const {
  return impl_->num_in_flight();
}

}  // namespace strata::server
