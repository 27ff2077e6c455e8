#include "http/http_response.h"

#include "http/response_channel.h"

namespace strata::http {

HttpResponse::HttpResponse(std::shared_ptr<detail::ResponseChannel> channel)
    : channel_(std::move(channel)) {}

HttpResponse::~HttpResponse() {
  channel_->release();
}

bool HttpResponse::send(int status, std::string_view content_type, std::string body,
                        const HeaderList& headers) {
  return channel_->send(status, content_type, std::move(body), headers);
}

bool HttpResponse::send(HttpReply reply) {
  return channel_->send(reply.status, reply.content_type, std::move(reply.body), reply.headers);
}

bool HttpResponse::start_stream(int status, std::string_view content_type,
                                const HeaderList& headers) {
  return channel_->start_stream(status, content_type, headers);
}

bool HttpResponse::start_sse(const HeaderList& headers) {
  HeaderList all = {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
  all.insert(all.end(), headers.begin(), headers.end());
  return channel_->start_stream(200, "text/event-stream", all);
}

bool HttpResponse::write(std::string_view data) {
  return channel_->write(data);
}

bool HttpResponse::finish() {
  return channel_->finish();
}

void HttpResponse::on_disconnect(std::function<void()> callback) {
  channel_->on_disconnect(std::move(callback));
}

bool HttpResponse::is_disconnected() const {
  return channel_->is_disconnected();
}

size_t HttpResponse::queued_bytes() const {
  return channel_->queued_bytes();
}

std::string sse_event(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 8);
  size_t start = 0;
  for (;;) {
    size_t end = start;
    while (end < data.size() && data[end] != '\r' && data[end] != '\n') ++end;
    out.append("data: ");
    out.append(data.substr(start, end - start));
    out.push_back('\n');
    if (end >= data.size()) break;
    // CRLF is one line break.
    start = end + (data[end] == '\r' && end + 1 < data.size() && data[end + 1] == '\n' ? 2 : 1);
  }
  out.push_back('\n');
  return out;
}

}  // namespace strata::http
