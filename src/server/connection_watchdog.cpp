#include "server/connection_watchdog.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <vector>

namespace strata::server {
namespace {

std::string make_key(const std::string& addr, int port) {
  return addr + "|" + std::to_string(port);
}

int sockaddr_port(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(ss).sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(ss).sin6_port);
  return -1;
}

std::string sockaddr_host(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

// Calls fn(fd, key) for every connected TCP socket whose local port is `port`.
template <typename Fn>
void for_each_connection(int port, Fn&& fn) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  std::vector<int> fds;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    fds.push_back(std::atoi(e->d_name));
  }
  closedir(dir);
  for (int fd : fds) {
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t len = sizeof(local);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) continue;
    if (sockaddr_port(local) != port) continue;
    len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    fn(fd, make_key(sockaddr_host(peer), sockaddr_port(peer)));
  }
}

}  // namespace

ConnectionWatchdog::ConnectionWatchdog(int32_t header_timeout_s, int32_t scan_interval_ms)
    : header_timeout_s_(header_timeout_s), scan_interval_ms_(scan_interval_ms) {}

ConnectionWatchdog::~ConnectionWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    is_stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t ConnectionWatchdog::now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ConnectionWatchdog::start(int port) {
  port_ = port;
  thread_ = std::thread([this] { loop(); });
}

void ConnectionWatchdog::set_deadline(const std::string& peer_addr, int peer_port,
                                      int64_t deadline_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_[make_key(peer_addr, peer_port)].deadline_ns = deadline_ns;
}

int ConnectionWatchdog::find_fd(const std::string& peer_addr, int peer_port) const {
  const std::string key = make_key(peer_addr, peer_port);
  int found = -1;
  for_each_connection(port_, [&](int fd, const std::string& k) {
    if (k == key) found = fd;
  });
  return found;
}

void ConnectionWatchdog::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!is_stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(scan_interval_ms_));
    if (is_stopping_) break;
    lock.unlock();
    scan();
    lock.lock();
  }
}

void ConnectionWatchdog::scan() {
  struct Found {
    int fd;
    std::string key;
  };
  std::vector<Found> found;
  for_each_connection(port_, [&](int fd, const std::string& key) { found.push_back({fd, key}); });
  const int64_t t = now_ns();
  std::vector<Found> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, e] : entries_) e.is_seen = false;
    for (const Found& f : found) {
      auto [it, is_new] = entries_.try_emplace(f.key);
      if (is_new) it->second.deadline_ns = t + int64_t{header_timeout_s_} * 1000000000;
      it->second.is_seen = true;
      if (it->second.deadline_ns < t) {
        expired.push_back(f);
        it->second.deadline_ns = ConnectionWatchdog::kNoDeadline;
      }
    }
    for (auto it = entries_.begin(); it != entries_.end();) {
      it = it->second.is_seen ? std::next(it) : entries_.erase(it);
    }
  }
  // Re-check the peer right before shutting down: the descriptor may have
  // been closed and reused since the scan.
  for (const Found& f : expired) {
    bool still_same = false;
    for_each_connection(port_, [&](int fd, const std::string& key) {
      if (fd == f.fd && key == f.key) still_same = true;
    });
    if (still_same) shutdown(f.fd, SHUT_RDWR);
  }
}

}  // namespace strata::server
