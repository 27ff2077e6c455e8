#include "http/response_channel.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include "http/connection.h"
#include "http/request_parser.h"
#include "http/server_core.h"

namespace strata::http::detail {
namespace {

bool is_field_value_ok(std::string_view v) {
  for (char c : v) {
    const unsigned char u = static_cast<unsigned char>(c);
    if ((u < 0x20 && u != '\t') || u == 0x7f) return false;
  }
  return true;
}

bool is_header_ok(const Header& h) {
  if (h.name.empty()) return false;
  for (char c : h.name) {
    if (!is_token_char(static_cast<unsigned char>(c))) return false;
  }
  if (iequals(h.name, "Content-Length") || iequals(h.name, "Transfer-Encoding") ||
      iequals(h.name, "Connection")) {
    return false;
  }
  return is_field_value_ok(h.value);
}

void append_date(std::string* out) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  const size_t n = std::strftime(buf, sizeof(buf), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
  out->append(buf, n);
}

// 1xx, 204 and 304 have no body (RFC 9110 6.4.1).
bool has_no_body(int status) {
  return status < 200 || status == 204 || status == 304;
}

}  // namespace

ResponseChannel::ResponseChannel(std::shared_ptr<const ServerCore> core,
                                 std::shared_ptr<Poster> poster,
                                 std::weak_ptr<Connection> connection, ResponseContext context)
    : core_(std::move(core)),
      poster_(std::move(poster)),
      connection_(std::move(connection)),
      context_(context) {}

std::string ResponseChannel::format_head(int status, std::string_view content_type,
                                         const HeaderList& headers, bool is_chunked,
                                         bool has_length, size_t content_length) {
  std::string h;
  h.reserve(160 + content_type.size());
  char line[64];
  const std::string_view reason = reason_phrase(status);
  int n = std::snprintf(line, sizeof(line), "HTTP/1.1 %03d ", status);
  h.append(line, static_cast<size_t>(n));
  h.append(reason);
  h.append("\r\n");
  append_date(&h);
  if (!content_type.empty()) {
    h.append("Content-Type: ");
    h.append(content_type);
    h.append("\r\n");
  }
  if (is_chunked) {
    h.append("Transfer-Encoding: chunked\r\n");
  } else if (has_length) {
    n = std::snprintf(line, sizeof(line), "Content-Length: %zu\r\n", content_length);
    h.append(line, static_cast<size_t>(n));
  }
  if (!keep_alive_) {
    h.append("Connection: close\r\n");
  } else {
    if (context_.version_minor == 0) h.append("Connection: keep-alive\r\n");
    // How long an idle connection stays open: clients that honour it (Node's
    // undici, Python's urllib3 pools) stop reusing a connection before the
    // server closes it, instead of racing the close with a new request.
    const auto idle_s =
        std::chrono::duration_cast<std::chrono::seconds>(core_->options.idle_timeout).count();
    n = std::snprintf(line, sizeof(line), "Keep-Alive: timeout=%lld\r\n",
                      static_cast<long long>(std::max<int64_t>(1, idle_s)));
    h.append(line, static_cast<size_t>(n));
  }
  for (const Header& x : headers) {
    h.append(x.name);
    h.append(": ");
    h.append(x.value);
    h.append("\r\n");
  }
  h.append("\r\n");
  return h;
}

bool ResponseChannel::send(int status, std::string_view content_type, std::string body,
                           const HeaderList& headers) {
  bool is_valid = status >= 200 && status <= 599 && is_field_value_ok(content_type);
  for (const Header& h : headers) is_valid = is_valid && is_header_ok(h);
  HttpReply fallback;
  if (!is_valid) {
    fallback = core_->error_reply(HttpError{500, "invalid response from handler"});
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kNone || is_disconnected()) return false;
  keep_alive_ = context_.keep_alive && !core_->is_draining.load(std::memory_order_relaxed);
  if (!is_valid) {
    status = fallback.status;
    content_type = fallback.content_type;
    body = std::move(fallback.body);
  }
  const HeaderList& extra = is_valid ? headers : fallback.headers;
  const bool no_body = has_no_body(status);
  phase_ = Phase::kFinished;
  enqueue_locked(format_head(status, content_type, extra, false, !no_body, body.size()));
  if (!context_.is_head && !no_body && !body.empty()) enqueue_locked(std::move(body));
  return is_valid;
}

bool ResponseChannel::start_stream(int status, std::string_view content_type,
                                   const HeaderList& headers) {
  bool is_valid =
      status >= 200 && status <= 599 && !has_no_body(status) && is_field_value_ok(content_type);
  for (const Header& h : headers) is_valid = is_valid && is_header_ok(h);
  if (!is_valid) {
    HttpReply r = core_->error_reply(HttpError{500, "invalid response from handler"});
    send(r.status, r.content_type, std::move(r.body), r.headers);
    return false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kNone || is_disconnected()) return false;
  // HTTP/1.0 has no chunked coding: the body ends when the connection does.
  keep_alive_ = context_.keep_alive && context_.version_minor == 1 &&
                !core_->is_draining.load(std::memory_order_relaxed);
  phase_ = Phase::kStreaming;
  enqueue_locked(format_head(status, content_type, headers, context_.version_minor == 1, false, 0));
  return true;
}

bool ResponseChannel::write(std::string_view data) {
  const bool is_chunked = context_.version_minor == 1;
  std::string frame;
  if (!data.empty() && !context_.is_head) {
    if (is_chunked) {
      char size_line[24];
      const int n = std::snprintf(size_line, sizeof(size_line), "%zx\r\n", data.size());
      frame.reserve(static_cast<size_t>(n) + data.size() + 2);
      frame.append(size_line, static_cast<size_t>(n));
      frame.append(data);
      frame.append("\r\n");
    } else {
      frame.assign(data);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kStreaming || is_disconnected() || is_aborted_) return false;
  if (frame.empty()) return true;
  if (unsent_bytes_ + frame.size() > core_->options.max_write_queue_bytes) {
    // The reader is far behind: give up on it rather than buffer without bound.
    is_aborted_ = true;
    post_wakeup_locked();
    return false;
  }
  enqueue_locked(std::move(frame));
  return true;
}

bool ResponseChannel::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  if (phase_ != Phase::kStreaming || is_disconnected() || is_aborted_) return false;
  phase_ = Phase::kFinished;
  if (context_.version_minor == 1 && !context_.is_head) {
    enqueue_locked("0\r\n\r\n");
  } else {
    post_wakeup_locked();
  }
  return true;
}

void ResponseChannel::on_disconnect(std::function<void()> callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_completed_) return;
    if (!is_disconnected()) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback();
}

size_t ResponseChannel::queued_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unsent_bytes_;
}

void ResponseChannel::release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (phase_ == Phase::kFinished || is_disconnected() || is_aborted_) return;
    if (phase_ == Phase::kStreaming) {
      // What was written goes out; then the connection closes without the
      // terminating chunk, so the client sees a truncated body.
      phase_ = Phase::kFinished;
      keep_alive_ = false;
      post_wakeup_locked();
      return;
    }
  }
  HttpReply r = core_->error_reply(HttpError{500, "the handler did not respond"});
  (void)send(r.status, r.content_type, std::move(r.body), r.headers);
}

void ResponseChannel::enqueue_locked(std::string bytes) {
  unsent_bytes_ += bytes.size();
  pending_.push_back(std::move(bytes));
  post_wakeup_locked();
}

void ResponseChannel::post_wakeup_locked() {
  if (is_wakeup_posted_) return;
  is_wakeup_posted_ = poster_->post([connection = connection_, channel = this] {
    if (std::shared_ptr<Connection> c = connection.lock()) c->on_response_ready(channel);
  });
}

ResponseChannel::Batch ResponseChannel::take() {
  Batch b;
  std::lock_guard<std::mutex> lock(mu_);
  b.buffers.swap(pending_);
  is_wakeup_posted_ = false;
  b.is_complete = phase_ == Phase::kFinished;
  b.is_aborted = is_aborted_;
  b.keep_alive = keep_alive_;
  return b;
}

void ResponseChannel::on_written(size_t num_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  unsent_bytes_ -= std::min(num_bytes, unsent_bytes_);
}

bool ResponseChannel::is_finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return phase_ == Phase::kFinished || is_aborted_;
}

bool ResponseChannel::mark_disconnected() {
  std::vector<std::function<void()>> callbacks;
  bool fire = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (is_completed_ || is_disconnected()) return false;
    is_disconnected_.store(true, std::memory_order_release);
    fire = phase_ != Phase::kFinished;
    callbacks.swap(callbacks_);
  }
  if (fire) {
    for (auto& cb : callbacks) cb();
  }
  return fire;  // `callbacks` (and what they hold) die here, outside mu_
}

void ResponseChannel::mark_completed() {
  std::vector<std::function<void()>> callbacks;
  std::lock_guard<std::mutex> lock(mu_);
  is_completed_ = true;
  callbacks.swap(callbacks_);
  // Destroyed after the lock is released (declared first).
}

}  // namespace strata::http::detail
