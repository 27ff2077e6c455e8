// ConnectionWatchdog: enforces wall-clock deadlines on the server's accepted
// TCP connections, which cpp-httplib (0.11, per-recv timeouts only) cannot:
// a client that drips its headers a byte at a time (slowloris) or never
// finishes its body has its socket shut down once its deadline passes.
//
// Connections are found by scanning this process's socket descriptors bound
// to the server's port and are keyed by the peer's address and port (what
// an httplib::Request knows). A connection first seen gets header_timeout;
// the server moves its deadline as a request proceeds (set_deadline) and
// lifts it while a handler is working (kNoDeadline).
//
// Also maps a peer to its socket descriptor (find_fd), so a handler can poll
// whether its client is still there. Thread-safe; owns one scanning thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

namespace strata::server {

class ConnectionWatchdog {
 public:
  static constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

  // Scans every `scan_interval_ms`; new connections get `header_timeout_s`.
  ConnectionWatchdog(int32_t header_timeout_s, int32_t scan_interval_ms);
  ~ConnectionWatchdog();
  ConnectionWatchdog(const ConnectionWatchdog&) = delete;
  ConnectionWatchdog& operator=(const ConnectionWatchdog&) = delete;

  // Starts watching connections accepted on `port`.
  void start(int port);
  // Sets the deadline of the connection from `peer_addr`:`peer_port`
  // (steady-clock ns, or kNoDeadline).
  void set_deadline(const std::string& peer_addr, int peer_port, int64_t deadline_ns);
  // The socket descriptor of that connection, or -1. Only the thread serving
  // the connection may use it (it stays open while its handler runs).
  int find_fd(const std::string& peer_addr, int peer_port) const;

  static int64_t now_ns();

 private:
  struct Entry {
    int64_t deadline_ns = 0;
    bool is_seen = false;
  };
  void loop();
  void scan();

  const int32_t header_timeout_s_;
  const int32_t scan_interval_ms_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<std::string, Entry> entries_;
  bool is_stopping_ = false;
  std::thread thread_;
};

}  // namespace strata::server
