// RedisServer: a redis-server child process for tests, on a free localhost
// port, without persistence; shared by the tier and engine tests.
#pragma once

#include <string>

namespace strata::testing {

// A redis-server child process on a free localhost port (no persistence).
// Tests that need one skip when redis-server is not installed.
class RedisServer {
 public:
  explicit RedisServer(std::string password = {});
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  static bool is_available();
  // Starts on port() (picked once, reused after stop() so clients reconnect
  // to the same address). True when this child answers.
  bool start();
  void stop();  // SIGKILL + wait: as if it crashed
  bool is_running() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

  // Sends DEBUG SLEEP `seconds` on a separate connection and returns once the
  // server stopped answering (it is then busy for about `seconds`).
  bool begin_debug_sleep(int seconds);
  // Waits for the DEBUG SLEEP reply (the server answers again).
  void end_debug_sleep();
  // Runs a command on a fresh connection; returns the reply as text ("" on error).
  std::string command(const std::string& cmd);

 private:
  bool spawn_and_wait();

  std::string password_;
  int port_ = 0;
  int pid_ = -1;
  bool has_started_ = false;   // once started, the port is kept
  void* sleep_ctx_ = nullptr;  // redisContext* of the DEBUG SLEEP connection
};

}  // namespace strata::testing
