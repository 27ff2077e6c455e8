#include "router/proxy_call.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "router/sse_frame_buffer.h"
#include "server/api_error.h"

namespace strata::router {
namespace {

using nlohmann::json;

// An error response of the router's own, as an OpenAI error body.
http::HttpReply error_reply(int status, std::string message) {
  server::ApiError e;
  e.http_status = status;
  e.type = status == 503 ? "service_unavailable" : "server_error";
  e.message = std::move(message);
  return http::HttpReply{status, "application/json", e.body(), {}};
}

bool is_retryable_status(int status) {
  return status == 429 || status >= 500;
}

// Upstream response headers the client gets too (the transport owns
// framing; hop-by-hop fields stay behind).
http::HeaderList client_headers(const http::HeaderList& upstream) {
  http::HeaderList out;
  for (const http::Header& h : upstream) {
    if (http::iequals(h.name, "x-request-id") || http::iequals(h.name, "retry-after")) {
      out.push_back(h);
    }
  }
  return out;
}

}  // namespace

struct ProxyCall::Attempt {
  ProxyTarget target;
  uint64_t seq = 0;
  int status = 0;
  std::string content_type;
  http::HeaderList headers;
  bool is_sse = false;
  bool is_retry_status = false;
  bool is_pending = true;  // counted in the replica's routed_pending_tokens
  std::string body;        // non-SSE responses, and retryable error bodies
  SseFrameBuffer frames;
  bool is_continuation = false;   // a try after a migration
  bool has_forwarded = false;     // an event of this try reached the client
  std::optional<json> migration;  // the record this try ended with
};

namespace {

constexpr std::string_view kMigrateEventLine = "event: strata.migrate";
constexpr std::string_view kMigrateBodyPrefix = "{\"strata_migrate\":";
constexpr int kMaxMigrations = 4;

// The record of a migration event or body; nullopt when malformed.
std::optional<json> migration_record(std::string_view text) {
  const size_t data = text.find("data:");
  if (text.rfind(kMigrateEventLine, 0) == 0) {
    if (data == std::string_view::npos) return std::nullopt;
    text = text.substr(data + 5);
  }
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("strata_migrate")) return std::nullopt;
  return j["strata_migrate"];
}

}  // namespace

std::shared_ptr<ProxyCall> ProxyCall::start(http::HttpClient* client, ProxyRequest request,
                                            std::vector<ProxyTarget> order, ProxyOptions options,
                                            http::ResponsePtr response, RouterMetrics* metrics) {
  auto call = std::make_shared<ProxyCall>(client, std::move(request), std::move(order), options,
                                          std::move(response), metrics);
  std::weak_ptr<ProxyCall> weak = call;
  call->response_->on_disconnect([weak] {
    if (auto c = weak.lock()) c->cancel_from_client();
  });
  call->try_next();
  return call;
}

std::shared_ptr<Replica> ProxyCall::current_replica() {
  std::lock_guard<std::mutex> lock(mu_);
  return current_replica_;
}

void ProxyCall::abandon_try_on(const Replica* replica) {
  std::shared_ptr<http::ClientCall> call;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_cancelled_ || current_replica_.get() != replica || current_ == nullptr) return;
    abandoned_seq_ = attempt_seq_;
    call = current_;
  }
  call->cancel();
}

ProxyCall::ProxyCall(http::HttpClient* client, ProxyRequest request, std::vector<ProxyTarget> order,
                     ProxyOptions options, http::ResponsePtr response, RouterMetrics* metrics)
    : client_(client),
      request_(std::move(request)),
      order_(std::move(order)),
      options_(options),
      response_(std::move(response)),
      metrics_(metrics) {}

void ProxyCall::cancel_from_client() {
  std::shared_ptr<http::ClientCall> call;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_cancelled_) return;
    is_cancelled_ = true;
    call = current_;
  }
  if (request_.is_generation) metrics_->num_client_disconnects.fetch_add(1);
  if (call) call->cancel();
}

void ProxyCall::fail_all(int status, std::string message) {
  if (is_client_started_) {
    // A migrated stream whose continuation found no worker: end it as a
    // stream that broke off.
    if (request_.is_generation) metrics_->num_failed_mid_stream.fetch_add(1);
    server::ApiError e;
    e.http_status = status;
    e.type = "server_error";
    e.message = std::move(message);
    response_->write(http::sse_event(e.body()));
    response_->write("data: [DONE]\n\n");
    response_->finish();
    return;
  }
  if (request_.is_generation) metrics_->num_failed.fetch_add(1);
  if (last_error_) {
    response_->send(std::move(*last_error_));
  } else {
    response_->send(error_reply(status, std::move(message)));
  }
}

void ProxyCall::try_next() {
  // The next replica still taking requests (an earlier try may have
  // ejected one further down the order).
  std::shared_ptr<Attempt> a;
  while (next_target_ < order_.size() && num_attempts_ < options_.max_attempts) {
    ProxyTarget& t = order_[next_target_++];
    if (num_attempts_ > 0 && (!t.replica->is_available() || t.replica->is_draining())) continue;
    a = std::make_shared<Attempt>();
    a->target = t;
    break;
  }
  if (a == nullptr) {
    fail_all(502, last_failure_.empty() ? "No replica could serve the request."
                                        : "No replica could serve the request: " + last_failure_);
    return;
  }
  ++num_attempts_;
  a->is_continuation = num_migrations_ > 0;
  Replica& r = *a->target.replica;
  if (request_.is_generation) r.num_routed.fetch_add(1);
  r.num_in_flight.fetch_add(1);
  r.routed_pending_tokens.fetch_add(request_.num_prompt_tokens);

  http::ClientRequest cr;
  cr.host = r.endpoint().host;
  cr.port = r.endpoint().port;
  cr.method = request_.method;
  cr.target = request_.target;
  cr.headers = request_.headers;
  cr.body = request_.body;

  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_cancelled_) {
      end_pending(*a);
      r.num_in_flight.fetch_sub(1);
      return;
    }
    a->seq = ++attempt_seq_;
    current_replica_ = a->target.replica;
  }
  auto self = shared_from_this();
  http::ClientCallbacks cb;
  cb.on_head = [self, a](const http::ClientResponseHead& head) { self->on_head(a, head); };
  cb.on_data = [self, a](std::string_view data) { return self->on_data(a, data); };
  cb.on_complete = [self, a](const http::ClientOutcome& o) { self->on_complete(a, o); };
  std::shared_ptr<http::ClientCall> call = client_->start(std::move(cr), std::move(cb));
  bool cancel_now = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A fast failure may already have moved on to the next try.
    if (attempt_seq_ == a->seq) current_ = call;
    cancel_now = is_cancelled_;
  }
  if (cancel_now) call->cancel();
}

void ProxyCall::end_pending(Attempt& a) {
  if (!a.is_pending) return;
  a.is_pending = false;
  a.target.replica->routed_pending_tokens.fetch_sub(request_.num_prompt_tokens);
}

void ProxyCall::on_head(const std::shared_ptr<Attempt>& a, const http::ClientResponseHead& head) {
  a->status = head.status;
  a->headers = head.headers;
  a->content_type = std::string(head.header("content-type").value_or("application/octet-stream"));
  a->is_sse = head.status == 200 && a->content_type.rfind("text/event-stream", 0) == 0;
  a->is_retry_status = is_retryable_status(head.status);
}

bool ProxyCall::on_data(const std::shared_ptr<Attempt>& a, std::string_view data) {
  if (!a->is_sse) {
    a->body.append(data);
    return true;
  }
  a->frames.append(data);
  while (std::optional<std::string> event = a->frames.next()) {
    if (event->rfind(kMigrateEventLine, 0) == 0) {
      a->migration = migration_record(*event);
      if (!a->migration) a->migration = json();  // malformed: the stream fails below
      continue;
    }
    a->has_forwarded = true;
    if (!is_client_started_) {
      is_client_started_ = true;
      end_pending(*a);
      if (!response_->start_stream(a->status, a->content_type, client_headers(a->headers))) {
        return false;  // the client is gone
      }
    }
    if (request_.is_generation && event->find("\"cached_tokens\"") != std::string::npos) {
      const size_t colon = event->find(':');
      if (colon != std::string::npos) read_usage(*a, std::string_view(*event).substr(colon + 1));
    }
    if (!response_->write(*event)) return false;
  }
  return true;
}

void ProxyCall::read_usage(Attempt& a, std::string_view json_text) {
  const json j = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return;
  auto usage = j.find("usage");
  if (usage == j.end() || !usage->is_object()) return;
  auto details = usage->find("prompt_tokens_details");
  if (details == usage->end() || !details->is_object()) return;
  auto cached = details->find("cached_tokens");
  if (cached == details->end() || !cached->is_number_integer()) return;
  Replica& r = *a.target.replica;
  r.actual_cached_tokens.fetch_add(cached->get<int64_t>());
  if (a.target.predicted_cached_tokens) {
    r.predicted_cached_tokens.fetch_add(*a.target.predicted_cached_tokens);
  }
}

void ProxyCall::on_complete(const std::shared_ptr<Attempt>& a, const http::ClientOutcome& o) {
  Replica& r = *a->target.replica;
  end_pending(*a);
  r.num_in_flight.fetch_sub(1);
  bool is_cancelled = false;
  bool is_abandoned = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (attempt_seq_ == a->seq) {
      current_.reset();  // breaks the callbacks' cycle
      current_replica_.reset();
    }
    is_cancelled = is_cancelled_;
    is_abandoned = abandoned_seq_ == a->seq;
  }
  if (is_cancelled || (o.error == http::ClientError::kCancelled && response_->is_disconnected())) {
    return;  // the client went away: nothing to answer, nothing to retry
  }
  if (o.ok() && a->migration) {
    migrate(a, std::move(*a->migration));
    return;
  }
  if (o.ok() && !a->is_sse && a->status == 200 &&
      std::string_view(a->body).rfind(kMigrateBodyPrefix, 0) == 0) {
    std::optional<json> record = migration_record(a->body);
    migrate(a, record ? std::move(*record) : json());
    return;
  }
  const bool was_abandoned = is_abandoned && o.error == http::ClientError::kCancelled;
  if (was_abandoned) {
    // The replica was ejected while this try waited on it.
    last_failure_ = r.url() + ": ejected while the request waited";
    r.num_retries.fetch_add(can_retry(*a) ? 1 : 0);
    if (can_retry(*a)) {
      try_next();
      return;
    }
  }
  if (!o.ok() && !was_abandoned) {
    r.record_failure(o.message);
    last_failure_ = r.url() + ": " + o.message;
    if (can_retry(*a)) {
      r.num_retries.fetch_add(1);
      try_next();
      return;
    }
  }
  if (!o.ok()) {
    // Mid-stream: what the client already has stands; end it cleanly.
    if (request_.is_generation) metrics_->num_failed_mid_stream.fetch_add(1);
    server::ApiError e;
    e.http_status = 502;
    e.type = "server_error";
    e.message = "The replica serving this stream failed: " + o.message;
    response_->write(http::sse_event(e.body()));
    response_->write("data: [DONE]\n\n");
    response_->finish();
    return;
  }
  if (a->is_retry_status) {
    if (a->status >= 500) {
      r.record_failure("status " + std::to_string(a->status));
    }
    last_failure_ = r.url() + ": status " + std::to_string(a->status);
    last_error_ =
        http::HttpReply{a->status, a->content_type, std::move(a->body), client_headers(a->headers)};
    r.num_retries.fetch_add(1);
    try_next();
    return;
  }
  r.record_success();
  if (a->is_sse) {
    if (!is_client_started_) {
      is_client_started_ = true;
      response_->start_stream(a->status, a->content_type, client_headers(a->headers));
    }
    // A last event without its blank line still reaches the client.
    if (a->frames.num_pending_bytes() > 0) {
      a->frames.append("\n\n");
      while (std::optional<std::string> event = a->frames.next()) response_->write(*event);
    }
    response_->finish();
    return;
  }
  if (request_.is_generation && a->status == 200) read_usage(*a, a->body);
  is_client_started_ = true;
  response_->send(a->status, a->content_type, std::move(a->body), client_headers(a->headers));
}

bool ProxyCall::can_retry(const Attempt& a) const {
  return a.is_continuation ? !a.has_forwarded : !is_client_started_;
}

void ProxyCall::migrate(const std::shared_ptr<Attempt>& a, json record) {
  Replica& from = *a->target.replica;
  json body = json::parse(request_.body, nullptr, /*allow_exceptions=*/false);
  if (!record.is_object() || !body.is_object() || num_migrations_ >= kMaxMigrations) {
    last_failure_ = from.url() + ": a migration the router cannot continue";
    if (is_client_started_) {
      if (request_.is_generation) metrics_->num_failed_mid_stream.fetch_add(1);
      server::ApiError e;
      e.http_status = 502;
      e.type = "server_error";
      e.message = "The replica serving this stream was drained and it could not move.";
      response_->write(http::sse_event(e.body()));
      response_->write("data: [DONE]\n\n");
      response_->finish();
    } else {
      fail_all(502, last_failure_);
    }
    return;
  }
  ++num_migrations_;
  metrics_->num_migrations.fetch_add(1);
  body["strata_resume"] = std::move(record);
  request_.body = body.dump();
  // The policy's order, without the worker that handed the request over.
  std::vector<ProxyTarget> order;
  for (ProxyTarget& t : order_) {
    if (t.replica.get() != &from) order.push_back(t);
  }
  order_ = std::move(order);
  next_target_ = 0;
  num_attempts_ = 0;
  try_next();
}

}  // namespace strata::router
