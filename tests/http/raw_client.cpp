#include "http/raw_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace strata::http::testing {
namespace {

using Clock = std::chrono::steady_clock;

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count());
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

RawClient::RawClient(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  fd_ = fd;
}

RawClient::~RawClient() {
  close();
}

RawClient::RawClient(RawClient&& other) noexcept
    : fd_(other.fd_), buffered_(std::move(other.buffered_)), is_eof_(other.is_eof_) {
  other.fd_ = -1;
}

bool RawClient::send_all(std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

size_t RawClient::send_some(std::string_view bytes, Ms timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  size_t sent = 0;
  while (sent < bytes.size()) {
    pollfd p{fd_, POLLOUT, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r <= 0 || (p.revents & (POLLERR | POLLHUP))) break;
    const ssize_t n =
        ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      break;
    }
    sent += static_cast<size_t>(n);
  }
  return sent;
}

bool RawClient::fill(Clock::time_point deadline) {
  if (fd_ < 0 || is_eof_) return false;
  pollfd p{fd_, POLLIN, 0};
  const int r = ::poll(&p, 1, remaining_ms(deadline));
  if (r <= 0) return false;
  char buf[65536];
  const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
  if (n <= 0) {
    is_eof_ = true;
    return false;
  }
  buffered_.append(buf, static_cast<size_t>(n));
  return true;
}

std::optional<std::string> RawClient::take_line(Clock::time_point deadline) {
  for (;;) {
    const size_t end = buffered_.find("\r\n");
    if (end != std::string::npos) {
      std::string line = buffered_.substr(0, end);
      buffered_.erase(0, end + 2);
      return line;
    }
    if (!fill(deadline)) return std::nullopt;
  }
}

bool RawClient::take_bytes(size_t n, Clock::time_point deadline, std::string* out) {
  while (buffered_.size() < n) {
    if (!fill(deadline)) return false;
  }
  out->append(buffered_, 0, n);
  buffered_.erase(0, n);
  return true;
}

std::optional<RawResponse> RawClient::read_head(Ms timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  RawResponse r;
  std::optional<std::string> status_line = take_line(deadline);
  if (!status_line) return std::nullopt;
  if (status_line->size() < 12 || status_line->compare(0, 5, "HTTP/") != 0) return std::nullopt;
  r.status = std::atoi(status_line->c_str() + 9);
  r.head = *status_line + "\r\n";
  for (;;) {
    std::optional<std::string> line = take_line(deadline);
    if (!line) return std::nullopt;
    r.head += *line + "\r\n";
    if (line->empty()) break;
    const size_t colon = line->find(':');
    if (colon == std::string::npos) return std::nullopt;
    r.headers.push_back(Header{line->substr(0, colon),
                               std::string(trim(std::string_view(*line).substr(colon + 1)))});
  }
  const auto te = r.header("Transfer-Encoding");
  r.is_chunked = te && iequals(*te, "chunked");
  return r;
}

std::optional<std::string> RawClient::read_chunk(Ms timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::optional<std::string> size_line = take_line(deadline);
  if (!size_line) return std::nullopt;
  char* end = nullptr;
  const unsigned long long size = std::strtoull(size_line->c_str(), &end, 16);
  if (end == size_line->c_str()) return std::nullopt;
  std::string data;
  if (size == 0) {
    // Trailers up to the empty line.
    for (;;) {
      std::optional<std::string> line = take_line(deadline);
      if (!line) return std::nullopt;
      if (line->empty()) return data;
    }
  }
  if (!take_bytes(static_cast<size_t>(size), deadline, &data)) return std::nullopt;
  std::string crlf;
  if (!take_bytes(2, deadline, &crlf) || crlf != "\r\n") return std::nullopt;
  return data;
}

std::optional<RawResponse> RawClient::read_response(Ms timeout, bool is_head) {
  const Clock::time_point deadline = Clock::now() + timeout;
  std::optional<RawResponse> r = read_head(timeout);
  if (!r) return std::nullopt;
  if (is_head || r->status < 200 || r->status == 204 || r->status == 304) return r;
  if (r->is_chunked) {
    for (;;) {
      std::optional<std::string> chunk =
          read_chunk(std::chrono::duration_cast<Ms>(deadline - Clock::now() + Ms(1)));
      if (!chunk) return std::nullopt;
      if (chunk->empty()) return r;
      r->body += *chunk;
      r->chunks.push_back(std::move(*chunk));
    }
  }
  if (const auto cl = r->header("Content-Length")) {
    const size_t n = static_cast<size_t>(std::strtoull(std::string(*cl).c_str(), nullptr, 10));
    if (!take_bytes(n, deadline, &r->body)) return std::nullopt;
    return r;
  }
  r->is_close_delimited = true;
  while (fill(deadline)) {
  }
  if (!is_eof_) return std::nullopt;
  r->body = std::move(buffered_);
  buffered_.clear();
  return r;
}

bool RawClient::wait_closed(Ms timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (!is_eof_) {
    if (fd_ < 0) return true;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, remaining_ms(deadline)) <= 0) return false;
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      is_eof_ = true;
      break;
    }
    buffered_.append(buf, static_cast<size_t>(n));
  }
  return true;
}

bool RawClient::has_activity(Ms timeout) {
  if (!buffered_.empty() || is_eof_) return true;
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
}

void RawClient::shutdown_write() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

void RawClient::reset() {
  if (fd_ < 0) return;
  linger l{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close();
}

void RawClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::optional<RawResponse> one_shot(uint16_t port, std::string_view request,
                                    RawClient::Ms timeout) {
  RawClient c(port);
  if (!c.is_connected() || !c.send_all(request)) return std::nullopt;
  return c.read_response(timeout);
}

int64_t rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atoll(line.c_str() + 6);
  }
  return -1;
}

}  // namespace strata::http::testing
