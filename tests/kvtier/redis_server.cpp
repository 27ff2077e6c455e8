// RedisServer (kvtier_test_util.h): a redis-server child process for tests.
#include "redis_server.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace strata::testing {
namespace {

int pick_free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// Redis >= 7 refuses DEBUG unless enabled; older servers reject the option.
bool server_needs_debug_flag() {
  FILE* p = ::popen("redis-server --version 2>/dev/null", "r");
  if (p == nullptr) return false;
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, p);
  ::pclose(p);
  const std::string s(buf, n);
  const size_t v = s.find("v=");
  return v != std::string::npos && std::atoi(s.c_str() + v + 2) >= 7;
}

redisContext* connect_ms(int port, int ms) {
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (c != nullptr && c->err == 0) redisSetTimeout(c, tv);
  return c;
}

}  // namespace

bool RedisServer::is_available() {
  return ::system("command -v redis-server >/dev/null 2>&1") == 0;
}

RedisServer::RedisServer(std::string password) : password_(std::move(password)) {
  port_ = pick_free_port();
}

RedisServer::~RedisServer() {
  if (sleep_ctx_ != nullptr) redisFree(static_cast<redisContext*>(sleep_ctx_));
  stop();
}

bool RedisServer::start() {
  if (pid_ > 0) return true;
  // Tests run in parallel processes: a port picked free may be taken before
  // this server binds it. A first start moves to another port then; a
  // restart keeps its port (clients reconnect to it).
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (spawn_and_wait()) return true;
    if (has_started_) return false;
    port_ = pick_free_port();
  }
  return false;
}

bool RedisServer::spawn_and_wait() {
  static const bool kDebugFlag = server_needs_debug_flag();
  std::vector<std::string> args = {
      "redis-server", "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
      "--appendonly", "no",     "--daemonize",         "no"};
  if (kDebugFlag) args.insert(args.end(), {"--enable-debug-command", "yes"});
  if (!password_.empty()) args.insert(args.end(), {"--requirepass", password_});
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    // Dies with the test process even if it crashes before stop().
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::chdir("/tmp");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp("redis-server", argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  // Wait (up to ~10 s) until it answers.
  for (int i = 0; i < 200; ++i) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // exited: bad port or flags
      pid_ = -1;
      return false;
    }
    // Answering is not enough: it must be this child (not another test's
    // server on the same port, while this one fails to bind).
    if (command("INFO server").find("process_id:" + std::to_string(pid_) + "\r") !=
        std::string::npos) {
      has_started_ = true;
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop();
  return false;
}

void RedisServer::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string RedisServer::command(const std::string& cmd) {
  redisContext* c = connect_ms(port_, 2000);
  std::string out;
  if (c != nullptr && c->err == 0) {
    if (!password_.empty()) {
      freeReplyObject(redisCommand(c, "AUTH %s", password_.c_str()));
    }
    auto* r = static_cast<redisReply*>(redisCommand(c, cmd.c_str()));
    if (r != nullptr) {
      if (r->type == REDIS_REPLY_INTEGER) {
        out = std::to_string(r->integer);
      } else if (r->str != nullptr) {
        out.assign(r->str, r->len);
      }
      freeReplyObject(r);
    }
  }
  if (c != nullptr) redisFree(c);
  return out;
}

bool RedisServer::begin_debug_sleep(int seconds) {
  redisContext* c = connect_ms(port_, (seconds + 5) * 1000);
  if (c == nullptr || c->err != 0) {
    if (c != nullptr) redisFree(c);
    return false;
  }
  if (!password_.empty()) freeReplyObject(redisCommand(c, "AUTH %s", password_.c_str()));
  redisAppendCommand(c, "DEBUG SLEEP %d", seconds);
  int done = 0;
  while (!done) {
    if (redisBufferWrite(c, &done) != REDIS_OK) {
      redisFree(c);
      return false;
    }
  }
  sleep_ctx_ = c;
  // Wait until a PING with a short timeout goes unanswered: the server sleeps.
  for (int i = 0; i < 100; ++i) {
    redisContext* probe = connect_ms(port_, 50);
    bool is_answering = false;
    if (probe != nullptr && probe->err == 0) {
      auto* r = static_cast<redisReply*>(redisCommand(probe, "PING"));
      // Unauthenticated PING gets an error reply: still an answer.
      is_answering = r != nullptr;
      if (r != nullptr) freeReplyObject(r);
    }
    if (probe != nullptr) redisFree(probe);
    if (!is_answering) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

void RedisServer::end_debug_sleep() {
  if (sleep_ctx_ == nullptr) return;
  auto* c = static_cast<redisContext*>(sleep_ctx_);
  void* reply = nullptr;
  if (redisGetReply(c, &reply) == REDIS_OK && reply != nullptr) freeReplyObject(reply);
  redisFree(c);
  sleep_ctx_ = nullptr;
}

}  // namespace strata::testing
