// HttpClient against the library's own server (TestServer) and, for
// misbehaving upstreams, a scripted raw-socket server.
#include "http/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/test_server.h"

namespace strata::http::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

ClientRequest get(uint16_t port, std::string target) {
  ClientRequest r;
  r.host = "127.0.0.1";
  r.port = port;
  r.target = std::move(target);
  return r;
}

ClientResult wait(std::future<ClientResult> f) {
  if (f.wait_for(10s) != std::future_status::ready) {
    ADD_FAILURE() << "no completion within 10 s";
    return ClientResult{};
  }
  return f.get();
}

// Accepts connections and hands each to `serve` on its own thread.
class ScriptedServer {
 public:
  explicit ScriptedServer(std::function<void(int fd, int index)> serve) : serve_(std::move(serve)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(fd_, 16);
    socklen_t len = sizeof(a);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      for (int i = 0;; ++i) {
        pollfd p{fd_, POLLIN, 0};
        while (!stop_.load() && ::poll(&p, 1, 20) == 0) {
        }
        if (stop_.load()) return;
        const int c = ::accept(fd_, nullptr, nullptr);
        if (c < 0) return;
        std::lock_guard<std::mutex> lock(mu_);
        workers_.emplace_back([this, c, i] {
          serve_(c, i);
          ::close(c);
        });
      }
    });
  }
  ~ScriptedServer() {
    stop_.store(true);
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : workers_) w.join();
    ::close(fd_);
  }
  uint16_t port() const { return port_; }

  // Reads until a request head ("\r\n\r\n") arrived; false on EOF.
  static bool read_head(int fd) {
    std::string got;
    char buf[4096];
    while (got.find("\r\n\r\n") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      got.append(buf, static_cast<size_t>(n));
    }
    return true;
  }
  static void send_str(int fd, std::string_view s) { ::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }

 private:
  std::function<void(int, int)> serve_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
};

TEST(HttpClientTest, FetchesAndPostsBodies) {
  TestServer s(TestServer::options());
  HttpClient client;
  ClientResult r = wait(client.fetch(get(s.port(), "/hello")));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  EXPECT_EQ(r.response.head.status, 200);
  EXPECT_EQ(r.response.body, "hello");
  EXPECT_EQ(r.response.head.header("content-length"), "5");
  ClientRequest post = get(s.port(), "/echo");
  post.method = "POST";
  post.body = std::string(1 << 20, 'p');
  post.headers.push_back({"Content-Type", "application/json"});
  r = wait(client.fetch(post));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  EXPECT_EQ(r.response.body, post.body);
  r = wait(client.fetch(get(s.port(), "/nope")));
  ASSERT_TRUE(r.outcome.ok());
  EXPECT_EQ(r.response.head.status, 404);
  ClientRequest head = get(s.port(), "/hello");
  head.method = "HEAD";
  r = wait(client.fetch(head));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  EXPECT_EQ(r.response.body, "");
  // The connection survived HEAD.
  r = wait(client.fetch(get(s.port(), "/hello")));
  EXPECT_EQ(r.response.body, "hello");
}

TEST(HttpClientTest, KeepAliveConnectionsArePooled) {
  TestServer s(TestServer::options());
  HttpClient client;
  for (int i = 0; i < 10; ++i) {
    ClientResult r = wait(client.fetch(get(s.port(), "/hello")));
    ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  }
  EXPECT_EQ(client.stats().num_connects, 1);
  EXPECT_EQ(client.stats().num_reuses, 9);
  EXPECT_EQ(client.stats().num_idle, 1);
  EXPECT_EQ(s.stats().num_accepted, 1);
}

TEST(HttpClientTest, AConnectionTheServerClosedWhileIdleIsNotReused) {
  HttpServerOptions o = TestServer::options();
  o.idle_timeout = 100ms;
  TestServer s(o);
  HttpClient client;
  ASSERT_TRUE(wait(client.fetch(get(s.port(), "/hello"))).outcome.ok());
  ASSERT_TRUE(wait_until([&] { return s.stats().num_open_connections == 0; }, 2000ms));
  ClientResult r = wait(client.fetch(get(s.port(), "/hello")));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  EXPECT_EQ(client.stats().num_connects, 2);
  EXPECT_EQ(client.stats().num_reuses, 0);
}

TEST(HttpClientTest, AStaleConnectionIsRetriedOnceOnAFreshOne) {
  // Connection 0 answers once and then drops the next request unanswered
  // (as a server closing an idle connection just as a request arrives);
  // connection 1 answers.
  ScriptedServer up([](int fd, int index) {
    if (!ScriptedServer::read_head(fd)) return;
    ScriptedServer::send_str(
        fd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nc" + std::to_string(index));
    if (index == 0) ScriptedServer::read_head(fd);  // then closes without answering
  });
  HttpClient client;
  ClientResult r = wait(client.fetch(get(up.port(), "/a")));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  EXPECT_EQ(r.response.body, "c0");
  r = wait(client.fetch(get(up.port(), "/b")));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  EXPECT_EQ(r.response.body, "c1");
  EXPECT_EQ(client.stats().num_retries, 1);
}

TEST(HttpClientTest, StreamsArriveIncrementally) {
  TestServer s(TestServer::options());
  HttpClient client;
  std::mutex mu;
  std::vector<std::string> pieces;
  std::vector<Clock::time_point> times;
  std::promise<ClientOutcome> done;
  ClientCallbacks cb;
  int status = 0;
  cb.on_head = [&](const ClientResponseHead& h) { status = h.status; };
  cb.on_data = [&](std::string_view d) {
    std::lock_guard<std::mutex> lock(mu);
    pieces.emplace_back(d);
    times.push_back(Clock::now());
    return true;
  };
  cb.on_complete = [&](const ClientOutcome& o) { done.set_value(o); };
  client.start(get(s.port(), "/sse?n=5&ms=40"), cb);
  std::future<ClientOutcome> f = done.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(f.get().ok());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(status, 200);
  std::string all;
  for (const std::string& p : pieces) all += p;
  EXPECT_EQ(all, "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n");
  // Event by event, not buffered to the end.
  EXPECT_GE(pieces.size(), 4u);
}

TEST(HttpClientTest, CancelClosesTheUpstreamConnection) {
  TestServer s(TestServer::options());
  HttpClient client;
  std::promise<void> first;
  std::promise<ClientOutcome> done;
  std::atomic<bool> got_first{false};
  ClientCallbacks cb;
  cb.on_data = [&](std::string_view) {
    if (!got_first.exchange(true)) first.set_value();
    return true;
  };
  cb.on_complete = [&](const ClientOutcome& o) { done.set_value(o); };
  std::shared_ptr<ClientCall> call = client.start(get(s.port(), "/sse-hang"), cb);
  ASSERT_EQ(first.get_future().wait_for(5s), std::future_status::ready);
  call->cancel();
  std::future<ClientOutcome> f = done.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f.get().error, ClientError::kCancelled);
  // The server saw the client go.
  EXPECT_TRUE(s.wait_disconnects(1, 2000ms));
  call->cancel();  // idempotent
  // A non-streaming one, cancelled while the server thinks.
  std::promise<ClientOutcome> done2;
  ClientCallbacks cb2;
  cb2.on_complete = [&](const ClientOutcome& o) { done2.set_value(o); };
  ClientRequest hang = get(s.port(), "/hang");
  hang.method = "POST";
  hang.body = "{}";
  std::shared_ptr<ClientCall> call2 = client.start(hang, cb2);
  ASSERT_TRUE(s.wait_hanging(2));
  call2->cancel();
  EXPECT_EQ(done2.get_future().get().error, ClientError::kCancelled);
  EXPECT_TRUE(s.wait_disconnects(2, 2000ms));
  EXPECT_EQ(client.stats().num_idle, 0);
}

TEST(HttpClientTest, OnDataReturningFalseCancels) {
  TestServer s(TestServer::options());
  HttpClient client;
  std::promise<ClientOutcome> done;
  ClientCallbacks cb;
  cb.on_data = [](std::string_view) { return false; };
  cb.on_complete = [&](const ClientOutcome& o) { done.set_value(o); };
  client.start(get(s.port(), "/sse-hang"), cb);
  EXPECT_EQ(done.get_future().get().error, ClientError::kCancelled);
  EXPECT_TRUE(s.wait_disconnects(1, 2000ms));
}

TEST(HttpClientTest, ConnectFailuresAndTimeouts) {
  HttpClientOptions o;
  o.read_timeout = 200ms;
  HttpClient client(o);
  // Nothing listens on the port of a server that was stopped.
  uint16_t dead_port = 0;
  {
    TestServer gone(TestServer::options());
    dead_port = gone.port();
  }
  ClientResult r = wait(client.fetch(get(dead_port, "/hello")));
  EXPECT_EQ(r.outcome.error, ClientError::kConnect) << r.outcome.message;
  EXPECT_NE(r.outcome.message.find("127.0.0.1:" + std::to_string(dead_port)), std::string::npos);
  ClientRequest unresolvable = get(80, "/");
  unresolvable.host = "host.invalid";
  r = wait(client.fetch(unresolvable));
  EXPECT_EQ(r.outcome.error, ClientError::kConnect) << r.outcome.message;

  TestServer s(TestServer::options());
  ClientRequest hang = get(s.port(), "/hang");
  hang.response_timeout = 200ms;
  const Clock::time_point t0 = Clock::now();
  r = wait(client.fetch(hang));
  EXPECT_EQ(r.outcome.error, ClientError::kTimeout) << r.outcome.message;
  EXPECT_GE(Clock::now() - t0, 200ms);
  EXPECT_TRUE(s.wait_disconnects(1, 2000ms));
  // Silence inside a body: read_timeout.
  r = wait(client.fetch(get(s.port(), "/sse-hang")));
  EXPECT_EQ(r.outcome.error, ClientError::kTimeout) << r.outcome.message;
  EXPECT_TRUE(s.wait_disconnects(2, 2000ms));
}

TEST(HttpClientTest, InvalidRequestsAreRefused) {
  HttpClient client;
  ClientRequest r = get(1, "/x");
  r.headers.push_back({"X-Bad", "a\r\nInjected: 1"});
  EXPECT_EQ(wait(client.fetch(r)).outcome.error, ClientError::kInvalidRequest);
  r = get(1, "/x");
  r.headers.push_back({"Content-Length", "5"});
  EXPECT_EQ(wait(client.fetch(r)).outcome.error, ClientError::kInvalidRequest);
  r = get(1, "no-slash");
  EXPECT_EQ(wait(client.fetch(r)).outcome.error, ClientError::kInvalidRequest);
}

TEST(HttpClientTest, MisbehavingUpstreams) {
  ScriptedServer up([](int fd, int index) {
    if (!ScriptedServer::read_head(fd)) return;
    switch (index) {
      case 0:
        ScriptedServer::send_str(fd, "NOT HTTP AT ALL\r\n\r\n");
        break;
      case 1:  // the body is cut short
        ScriptedServer::send_str(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        break;
      default:  // close-delimited (HTTP/1.0 style) is a complete body
        ScriptedServer::send_str(fd, "HTTP/1.0 200 OK\r\n\r\nuntil-eof");
        break;
    }
  });
  HttpClient client;
  EXPECT_EQ(wait(client.fetch(get(up.port(), "/"))).outcome.error, ClientError::kProtocol);
  EXPECT_EQ(wait(client.fetch(get(up.port(), "/"))).outcome.error, ClientError::kClosed);
  ClientResult r = wait(client.fetch(get(up.port(), "/")));
  ASSERT_TRUE(r.outcome.ok()) << r.outcome.message;
  EXPECT_EQ(r.response.body, "until-eof");
  EXPECT_EQ(client.stats().num_idle, 0);
}

TEST(HttpClientTest, FetchRefusesBodiesOverItsLimit) {
  TestServer s(TestServer::options());
  HttpClientOptions o;
  o.max_buffered_body_bytes = 1 << 20;
  HttpClient client(o);
  ClientResult r = wait(client.fetch(get(s.port(), "/big?mib=2")));
  EXPECT_EQ(r.outcome.error, ClientError::kProtocol);
}

TEST(HttpClientTest, ManyThreadsManyCalls) {
  TestServer s(TestServer::options());
  HttpClient client;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      std::vector<std::future<ClientResult>> fs;
      for (int i = 0; i < 25; ++i) {
        fs.push_back(client.fetch(get(s.port(), i % 2 ? "/later?ms=1" : "/sse?n=3")));
      }
      for (auto& f : fs) {
        ClientResult r = f.get();
        if (r.outcome.ok() && r.response.head.status == 200) ok.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 200);
  EXPECT_LE(client.stats().num_idle, 64);
}

TEST(HttpClientTest, DestroyingTheClientCancelsCallsInFlight) {
  TestServer s(TestServer::options());
  std::shared_ptr<ClientCall> call;
  std::promise<ClientOutcome> done;
  {
    HttpClient client;
    ClientCallbacks cb;
    cb.on_complete = [&](const ClientOutcome& o) { done.set_value(o); };
    call = client.start(get(s.port(), "/hang"), cb);
    ASSERT_TRUE(s.wait_hanging(1));
  }
  std::future<ClientOutcome> f = done.get_future();
  ASSERT_EQ(f.wait_for(1s), std::future_status::ready);
  EXPECT_EQ(f.get().error, ClientError::kCancelled);
  call->cancel();  // the handle outlives the client
  EXPECT_TRUE(s.wait_disconnects(1, 2000ms));
}

}  // namespace
}  // namespace strata::http::testing
