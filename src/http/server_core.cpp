#include "http/server_core.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/http/status.hpp>

namespace strata::http::detail {

bool Poster::post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ioc_ == nullptr) return false;
  boost::asio::post(*ioc_, std::move(fn));
  return true;
}

void Poster::detach() {
  std::lock_guard<std::mutex> lock(mu_);
  ioc_ = nullptr;
}

std::string_view reason_phrase(int status) {
  const boost::beast::string_view r =
      boost::beast::http::obsolete_reason(static_cast<boost::beast::http::status>(status));
  if (r.empty() || r.front() == '<') return "Unknown";  // "<unknown-status>"
  return std::string_view(r.data(), r.size());
}

HttpReply ServerCore::error_reply(const HttpError& error) const {
  if (options.error_formatter) return options.error_formatter(error);
  HttpReply r;
  r.status = error.status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::to_string(error.status);
  r.body += ' ';
  r.body += reason_phrase(error.status);
  r.body += ": ";
  r.body += error.message;
  r.body += '\n';
  return r;
}

}  // namespace strata::http::detail
