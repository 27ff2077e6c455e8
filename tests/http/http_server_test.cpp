// The protocol suite: raw bytes in, raw bytes out. Every case is followed
// by a canary request on a fresh connection that must be answered (within
// a generous bound that only detects hangs).
#include "http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "http/raw_client.h"
#include "http/test_server.h"

namespace strata::http::testing {
namespace {

using namespace std::chrono_literals;
using Ms = std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kHello = "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";

// Sanitizer builds keep shadow memory per allocation: leak bounds scale.
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int64_t kRssSlack = 6;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
constexpr int64_t kRssSlack = 6;
#else
constexpr int64_t kRssSlack = 1;
#endif
#else
constexpr int64_t kRssSlack = 1;
#endif

void expect_canary(uint16_t port, Ms bound = 2000ms) {
  const Clock::time_point t0 = Clock::now();
  std::optional<RawResponse> r = one_shot(port, kHello, bound);
  ASSERT_TRUE(r.has_value()) << "canary got no answer within " << bound.count() << " ms";
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_LT(Clock::now() - t0, bound);
}

std::string post(std::string_view path, std::string_view body, std::string_view extra = "") {
  return std::string("POST ") + std::string(path) +
         " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         std::string(extra) + "\r\n" + std::string(body);
}

// Sends `request` on a fresh connection; expects `status` and, when
// `closes`, the connection closed after it.
void expect_status(TestServer& s, std::string_view request, int status, bool closes) {
  RawClient c(s.port());
  ASSERT_TRUE(c.is_connected());
  ASSERT_TRUE(c.send_all(request));
  std::optional<RawResponse> r = c.read_response(5000ms);
  ASSERT_TRUE(r.has_value()) << "no response to: " << request.substr(0, 80);
  EXPECT_EQ(r->status, status) << r->head << r->body;
  if (closes) {
    EXPECT_EQ(r->header("Connection"), "close") << r->head;
    EXPECT_TRUE(c.wait_closed(5000ms));
  }
  expect_canary(s.port());
}

// ---------------------------------------------------------------- basics

TEST(HttpServerTest, AnswersAndKeepsTheConnectionAlive) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.send_all(kHello));
    std::optional<RawResponse> r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "hello");
    EXPECT_EQ(r->header("Content-Length"), "5");
    EXPECT_EQ(r->header("Content-Type"), "text/plain");
    EXPECT_TRUE(r->header("Date").has_value());
    EXPECT_FALSE(r->header("Connection").has_value());
  }
  EXPECT_EQ(s.stats().num_requests, 3);
  EXPECT_EQ(s.stats().num_accepted, 1);
}

TEST(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  // The first is answered 100 ms later from another thread; the others
  // must wait for it.
  const std::string three = "GET /later?ms=100 HTTP/1.1\r\nHost: t\r\n\r\n" + std::string(kHello) +
                            post("/echo", "third");
  ASSERT_TRUE(c.send_all(three));
  std::optional<RawResponse> r1 = c.read_response();
  std::optional<RawResponse> r2 = c.read_response();
  std::optional<RawResponse> r3 = c.read_response();
  ASSERT_TRUE(r1 && r2 && r3);
  EXPECT_EQ(r1->body, "later");
  EXPECT_EQ(r2->body, "hello");
  EXPECT_EQ(r3->body, "third");
  expect_canary(s.port());
}

TEST(HttpServerTest, ManyPipelinedRequestsInOneWrite) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  std::string all;
  for (int i = 0; i < 50; ++i) all += post("/echo", "n" + std::to_string(i));
  ASSERT_TRUE(c.send_all(all));
  for (int i = 0; i < 50; ++i) {
    std::optional<RawResponse> r = c.read_response();
    ASSERT_TRUE(r.has_value()) << i;
    EXPECT_EQ(r->body, "n" + std::to_string(i));
  }
}

TEST(HttpServerTest, Http10ClosesUnlessKeepAliveIsAsked) {
  TestServer s(TestServer::options());
  {
    RawClient c(s.port());
    ASSERT_TRUE(c.send_all("GET /info HTTP/1.0\r\n\r\n"));
    std::optional<RawResponse> r = c.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->body, "GET /info  1.0 close");
    EXPECT_EQ(r->header("Connection"), "close");
    EXPECT_TRUE(c.wait_closed());
  }
  {
    RawClient c(s.port());
    for (int i = 0; i < 2; ++i) {
      ASSERT_TRUE(c.send_all("GET /info HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
      std::optional<RawResponse> r = c.read_response();
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(r->body, "GET /info  1.0 keep-alive");
      EXPECT_EQ(r->header("Connection"), "keep-alive");
      // The idle timeout is announced, so clients stop reusing the
      // connection before the server closes it.
      EXPECT_TRUE(r->header("Keep-Alive").has_value());
    }
  }
  expect_canary(s.port());
}

TEST(HttpServerTest, ConnectionCloseIsHonoured) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" +
                         std::string(kHello)));
  std::optional<RawResponse> r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->header("Connection"), "close");
  EXPECT_TRUE(c.wait_closed());
  // The request after Connection: close is not answered.
  EXPECT_EQ(c.received_after_close(), "");
  expect_canary(s.port());
}

TEST(HttpServerTest, LeadingEmptyLinesAndAbsoluteFormTargets) {
  TestServer s(TestServer::options());
  std::optional<RawResponse> r =
      one_shot(s.port(), "\r\n\r\nGET http://example.com:99/info?a=b HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "GET /info a=b 1.1 keep-alive");
}

TEST(HttpServerTest, HeadIsAnsweredByTheGetRouteWithoutBody) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::optional<RawResponse> r = c.read_response(5000ms, /*is_head=*/true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->header("Content-Length"), "5");
  // No body bytes came: the next response starts right away.
  ASSERT_TRUE(c.send_all(kHello));
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "hello");
  // HEAD of a stream: headers only, then the connection goes on.
  ASSERT_TRUE(c.send_all("HEAD /sse?n=2 HTTP/1.1\r\nHost: t\r\n\r\n"));
  r = c.read_response(5000ms, /*is_head=*/true);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->header("Content-Type"), "text/event-stream");
  ASSERT_TRUE(c.send_all(kHello));
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "hello");
}

TEST(HttpServerTest, RequestBodiesAreRead) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  const std::string body(300000, 'b');
  ASSERT_TRUE(c.send_all(post("/size", body)));
  std::optional<RawResponse> r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "300000");
  // Chunked, with an extension and trailers, then a pipelined request.
  ASSERT_TRUE(
      c.send_all("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                 "5;x=y\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nX-T: 1\r\n\r\n" +
                 std::string(kHello)));
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "hello world");
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "hello");
  // A GET with a body.
  ASSERT_TRUE(c.send_all("GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc" +
                         std::string(kHello)));
  EXPECT_TRUE(c.read_response().has_value());
  EXPECT_TRUE(c.read_response().has_value());
}

TEST(HttpServerTest, Expect100Continue) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all(
      "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"));
  std::optional<RawResponse> interim = c.read_response();
  ASSERT_TRUE(interim.has_value());
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(c.send_all("body"));
  std::optional<RawResponse> r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "body");
  // A body sent along with the head needs no 100.
  ASSERT_TRUE(c.send_all(post("/echo", "xy", "Expect: 100-continue\r\n")));
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "xy");
  expect_status(s, "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: x\r\nContent-Length: 1\r\n\r\n", 417,
                true);
  // Too large: 413 straight away, never 100.
  RawClient big(s.port());
  ASSERT_TRUE(
      big.send_all("POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                   "Content-Length: 99999999\r\n\r\n"));
  r = big.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 413);
}

TEST(HttpServerTest, RoutingErrorsUseTheFormatter) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all("GET /nope HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::optional<RawResponse> r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "404 Not Found: no route for this path\n");
  ASSERT_TRUE(c.send_all("DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->header("Allow"), "GET, HEAD");
  // Both kept the connection: no body was pending.
  ASSERT_TRUE(c.send_all(kHello));
  EXPECT_TRUE(c.read_response().has_value());
  // A 404 with a body fully sent keeps the connection; one with a body
  // still to come closes it.
  ASSERT_TRUE(c.send_all(post("/nope", "abc") + std::string(kHello)));
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 404);
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "hello");
  expect_status(s, "POST /nope HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc", 404, true);
}

TEST(HttpServerTest, CustomErrorFormatterAndPrefixRoutes) {
  HttpServerOptions o = TestServer::options();
  o.error_formatter = [](const HttpError& e) {
    HttpReply r;
    r.status = e.status;
    r.content_type = "application/json";
    r.body = "{\"error\":{\"message\":\"" + std::string(e.message) + "\"}}";
    return r;
  };
  TestServer s(o);
  std::optional<RawResponse> r = one_shot(s.port(), "GET /x HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->header("Content-Type"), "application/json");
  EXPECT_EQ(r->body, "{\"error\":{\"message\":\"no route for this path\"}}");
  r = one_shot(s.port(), "GET /v1/models/org%2Fmy-model HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "org/my-model");
}

TEST(HttpServerTest, HeadHookRejectsBeforeTheBodyIsRead) {
  HttpServerOptions o = TestServer::options();
  o.head_hook = [](const HttpRequest& r) -> std::optional<HttpReply> {
    if (r.path == "/hello" || r.header("Authorization") == "Bearer k") return std::nullopt;
    HttpReply reply;
    reply.status = 401;
    reply.body = "unauthorized";
    reply.headers.push_back({"WWW-Authenticate", "Bearer"});
    return reply;
  };
  TestServer s(o);
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all(post("/echo", "x")));
  std::optional<RawResponse> r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->header("WWW-Authenticate"), "Bearer");
  ASSERT_TRUE(c.send_all(post("/echo", "ok", "Authorization: Bearer k\r\n")));
  r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "ok");
  // A large body never sent: refused at the head, connection closed.
  expect_status(s, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\r\n", 401, true);
  EXPECT_EQ(s.stats().num_requests, 2);  // /echo with the key, and the canary
}

// ---------------------------------------------------------------- malformed input

TEST(HttpServerTest, HugeContentLengthIs413AtOnceWithNothingRead) {
  TestServer s(TestServer::options());
  const int64_t read_before = s.stats().bytes_read;
  RawClient c(s.port());
  const std::string head =
      "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000000000\r\n\r\n";
  const Clock::time_point t0 = Clock::now();
  ASSERT_TRUE(c.send_all(head));
  std::optional<RawResponse> r = c.read_response(2000ms);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 413);
  EXPECT_LT(Clock::now() - t0, 2000ms);
  EXPECT_EQ(r->header("Connection"), "close");
  // A client that keeps sending: the server reads only what lingering
  // allows (64 KiB) and closes.
  const std::string flood(size_t{64} << 20, 'z');
  const size_t sent = c.send_some(flood, 3000ms);
  EXPECT_LT(sent, flood.size());
  EXPECT_TRUE(c.wait_closed(5000ms));
  const int64_t read = s.stats().bytes_read - read_before;
  EXPECT_LT(read, 128 << 10) << "the server read " << read << " bytes";
  expect_canary(s.port());
}

TEST(HttpServerTest, ContentLengthDefectsAre400) {
  TestServer s(TestServer::options());
  expect_status(s, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", 400, true);
  expect_status(s, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\n", 400, true);
  expect_status(
      s, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
      400, true);
  expect_status(
      s, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", 400,
      true);
  expect_status(s, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3, 3\r\n\r\nabc", 400, true);
  expect_status(s,
                "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\nTransfer-Encoding: "
                "chunked\r\n\r\n0\r\n\r\n",
                400, true);
  expect_status(s,
                "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: "
                "3\r\n\r\n0\r\n\r\n",
                400, true);
  EXPECT_EQ(s.stats().num_requests, 7);  // the canaries only
}

TEST(HttpServerTest, TransferEncodingDefectsAre400) {
  TestServer s(TestServer::options());
  expect_status(s, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
                400, true);
  expect_status(s, "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n", 400, true);
  expect_status(s, "POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, true);
}

TEST(HttpServerTest, ChunkDefects) {
  TestServer s(TestServer::options());
  const std::string head = "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  expect_status(s, head + "zz\r\nhello\r\n0\r\n\r\n", 400, true);
  expect_status(s, head + "-5\r\nhello\r\n0\r\n\r\n", 400, true);
  expect_status(s, head + "5\r\nhelloXX0\r\n\r\n", 400, true);
  expect_status(s, head + "fffffffffffffffff\r\n", 400, true);
  // Past max_body_bytes (4 MiB): 413 on the size line.
  expect_status(s, head + "500000\r\n", 413, true);
  // Grown chunk by chunk past it.
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all(head));
  const std::string chunk = "100000\r\n" + std::string(1 << 20, 'c') + "\r\n";
  std::optional<RawResponse> r;
  for (int i = 0; i < 6 && !r; ++i) {
    c.send_all(chunk);
    if (c.has_activity(10ms)) r = c.read_response(2000ms);
  }
  if (!r) r = c.read_response(2000ms);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 413);
  EXPECT_TRUE(c.wait_closed());
  expect_canary(s.port());
}

TEST(HttpServerTest, ControlBytesAndFoldingInHeadersAre400) {
  TestServer s(TestServer::options());
  expect_status(s, std::string("GET /hello HTTP/1.1\r\nHost: t\r\nX: a\0b\r\n\r\n", 40), 400, true);
  expect_status(s, "GET /hello HTTP/1.1\r\nHost: t\r\nX: a\rb\r\n\r\n", 400, true);
  expect_status(s, "GET /hello HTTP/1.1\r\nHost: t\r\nX: a\nb: c\r\n\r\n", 400, true);
  expect_status(s, "GET /hello HTTP/1.1\r\nHost: t\r\nX: a\x7f\r\n\r\n", 400, true);
  expect_status(s, "GET /hello HTTP/1.1\r\nHost: t\r\nX\x01Y: a\r\n\r\n", 400, true);
  expect_status(s, "GET /hello HTTP/1.1\r\nHost: t\r\nX: a\r\n folded\r\n\r\n", 400, true);
  expect_status(s, "GET /hello HTTP/1.1\r\nHost: t\r\nX : a\r\n\r\n", 400, true);
}

TEST(HttpServerTest, MalformedRequestLinesAndHosts) {
  TestServer s(TestServer::options());
  expect_status(s, "GET /hello HTTP/1.1\r\n\r\n", 400, true);
  expect_status(s, "GET /hello HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, true);
  expect_status(s, "GET /hello HTTP/2.0\r\nHost: t\r\n\r\n", 505, true);
  expect_status(s, "HELLO\r\n\r\n", 400, true);
  expect_status(s, "GET * HTTP/1.1\r\nHost: t\r\n\r\n", 400, true);
  expect_status(s, "GET  /hello HTTP/1.1\r\nHost: t\r\n\r\n", 400, true);
  expect_status(s, "GET /hello HTTP/1.1\nHost: t\n\n", 400, true);
}

TEST(HttpServerTest, TenThousandHeadersAre431) {
  TestServer s(TestServer::options());
  std::string req = "GET /hello HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 10000; ++i) req += "X-" + std::to_string(i) + ": v\r\n";
  req += "\r\n";
  RawClient c(s.port());
  const Clock::time_point t0 = Clock::now();
  c.send_some(req, 2000ms);
  std::optional<RawResponse> r = c.read_response(2000ms);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 431);
  EXPECT_LT(Clock::now() - t0, 3000ms);
  EXPECT_TRUE(c.wait_closed());
  expect_canary(s.port());
}

TEST(HttpServerTest, OversizedHeaderBlockIs431) {
  TestServer s(TestServer::options());
  expect_status(s, "GET /hello HTTP/1.1\r\nHost: t\r\nX: " + std::string(20000, 'a') + "\r\n\r\n",
                431, true);
  // 101 fields: one over the default limit.
  std::string req = "GET /hello HTTP/1.1\r\n";
  for (int i = 0; i < 100; ++i) req += "X: y\r\n";
  expect_status(s, req + "Host: t\r\n\r\n", 431, true);
}

// ---------------------------------------------------------------- handlers

TEST(HttpServerTest, UnansweredAndThrowingHandlersGet500) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  for (const char* path : {"/drop", "/throw", "/bad-header"}) {
    ASSERT_TRUE(c.send_all(std::string("GET ") + path + " HTTP/1.1\r\nHost: t\r\n\r\n"));
    std::optional<RawResponse> r = c.read_response();
    ASSERT_TRUE(r.has_value()) << path;
    EXPECT_EQ(r->status, 500) << path;
    EXPECT_FALSE(r->header("Injected").has_value());
  }
  EXPECT_TRUE(wait_until([&] { return s.stats().num_active_requests == 0; }, 2000ms));
}

TEST(HttpServerTest, AnAbandonedStreamEndsWithoutItsLastChunk) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all("GET /abandon HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::optional<RawResponse> head = c.read_head();
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(c.read_chunk(), "data: only\n\n");
  EXPECT_FALSE(c.read_chunk().has_value());  // closed, no terminating chunk
  expect_canary(s.port());
}

TEST(HttpServerTest, SseFromAForeignThread) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all("GET /sse?n=5&ms=5 HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::optional<RawResponse> r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->header("Content-Type"), "text/event-stream");
  EXPECT_EQ(r->header("Cache-Control"), "no-cache");
  ASSERT_EQ(r->chunks.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(r->chunks[i], "data: " + std::to_string(i) + "\n\n");
  // The connection stays usable.
  ASSERT_TRUE(c.send_all(kHello));
  EXPECT_TRUE(c.read_response().has_value());
  // HTTP/1.0: no chunked coding, the body ends with the connection.
  RawClient old(s.port());
  ASSERT_TRUE(old.send_all("GET /sse?n=3 HTTP/1.0\r\n\r\n"));
  r = old.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->is_close_delimited);
  EXPECT_EQ(r->body, "data: 0\n\ndata: 1\n\ndata: 2\n\n");
}

TEST(HttpServerTest, ResponsesFromForeignThreadsUnderConcurrency) {
  TestServer s(TestServer::options());
  constexpr int kClients = 16;
  constexpr int kRequests = 40;
  std::vector<std::thread> threads;
  std::atomic<int> num_ok{0};
  for (int t = 0; t < kClients; ++t) {
    threads.emplace_back([&, t] {
      RawClient c(s.port());
      for (int i = 0; i < kRequests; ++i) {
        const bool sse = (i + t) % 3 == 0;
        c.send_all(sse ? "GET /sse?n=4 HTTP/1.1\r\nHost: t\r\n\r\n"
                       : "GET /later?ms=0 HTTP/1.1\r\nHost: t\r\n\r\n");
        std::optional<RawResponse> r = c.read_response();
        if (r && r->status == 200 &&
            (sse ? r->body == "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\n"
                 : r->body == "later")) {
          num_ok.fetch_add(1);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(num_ok.load(), kClients * kRequests);
  EXPECT_TRUE(wait_until([&] { return s.stats().num_active_requests == 0; }, 2000ms));
}

TEST(HttpServerTest, LargeResponseToASlowReader) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all("GET /big?mib=8 HTTP/1.1\r\nHost: t\r\n\r\n"));
  std::this_thread::sleep_for(200ms);  // let the socket buffers fill
  std::optional<RawResponse> r = c.read_response(10000ms);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body.size(), size_t{8} << 20);
}

TEST(HttpServerTest, WorkerRoutesDoNotBlockTheIoThread) {
  HttpServerOptions o = TestServer::options();
  o.num_io_threads = 1;
  TestServer s(o);
  RawClient busy(s.port());
  ASSERT_TRUE(busy.send_all("GET /compute?ms=1500 HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(wait_until([&] { return s.stats().num_requests == 1; }, 2000ms));
  // The only I/O thread is free while the worker blocks.
  expect_canary(s.port(), 1000ms);
  std::optional<RawResponse> r = busy.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "computed");
  // A client gone while its worker handler blocks is seen.
  RawClient gone(s.port());
  ASSERT_TRUE(gone.send_all("GET /compute?ms=300 HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(wait_until([&] { return s.stats().num_requests == 3; }, 2000ms));
  gone.close();
  EXPECT_TRUE(wait_until([&] { return s.num_worker_saw_disconnect() == 1; }, 3000ms));
}

// ---------------------------------------------------------------- disconnects

TEST(HttpServerTest, DisconnectOfANonStreamingRequestIsSeenAtOnce) {
  TestServer s(TestServer::options());
  {
    RawClient c(s.port());
    ASSERT_TRUE(c.send_all(post("/hang", "{\"prompt\":\"x\"}")));
    ASSERT_TRUE(s.wait_hanging(1));
    EXPECT_EQ(s.num_disconnects(), 0);
    c.close();  // FIN
    EXPECT_TRUE(s.wait_disconnects(1, 2000ms));
  }
  {
    RawClient c(s.port());
    ASSERT_TRUE(c.send_all("GET /hang HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(s.wait_hanging(2));
    c.reset();  // RST
    EXPECT_TRUE(s.wait_disconnects(2, 2000ms));
  }
  {
    // Pipelined bytes after the hanging request do not hide the close.
    RawClient c(s.port());
    ASSERT_TRUE(c.send_all("GET /hang HTTP/1.1\r\nHost: t\r\n\r\n" + std::string(kHello)));
    ASSERT_TRUE(s.wait_hanging(3));
    c.close();
    EXPECT_TRUE(s.wait_disconnects(3, 2000ms));
  }
  EXPECT_EQ(s.stats().num_disconnects, 3);
  EXPECT_TRUE(wait_until([&] { return s.stats().num_active_requests == 0; }, 2000ms));
  expect_canary(s.port());
}

TEST(HttpServerTest, DisconnectOfAStreamIsSeenAtOnce) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all("GET /sse-hang HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(c.read_head().has_value());
  EXPECT_EQ(c.read_chunk(), "data: first\n\n");
  EXPECT_EQ(s.num_disconnects(), 0);
  c.close();
  EXPECT_TRUE(s.wait_disconnects(1, 2000ms));
  expect_canary(s.port());
}

TEST(HttpServerTest, AClientHalfClosingAfterARequestStillGetsAQuickAnswer) {
  TestServer s(TestServer::options());
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all(kHello));
  c.shutdown_write();
  std::optional<RawResponse> r = c.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "hello");
  EXPECT_TRUE(c.wait_closed());
}

TEST(HttpServerTest, AReaderThatDoesNotDrainIsDisconnected) {
  HttpServerOptions o = TestServer::options();
  o.max_write_queue_bytes = 256 << 10;
  TestServer s(o);
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all("GET /flood?kib=64 HTTP/1.1\r\nHost: t\r\n\r\n"));
  // The client never reads: kernel buffers fill, then the bounded queue.
  EXPECT_TRUE(wait_until([&] { return s.is_flood_refused(); }, 20000ms));
  EXPECT_TRUE(s.wait_disconnects(1, 2000ms));
  EXPECT_GT(s.flood_frames(), 0);
  expect_canary(s.port());
}

TEST(HttpServerTest, AStalledWriteTimesOut) {
  HttpServerOptions o = TestServer::options();
  o.write_timeout = 300ms;
  TestServer s(o);
  RawClient c(s.port());
  ASSERT_TRUE(c.send_all("GET /big?mib=64 HTTP/1.1\r\nHost: t\r\n\r\n"));
  EXPECT_TRUE(wait_until([&] { return s.stats().num_timeouts >= 1; }, 10000ms));
  EXPECT_TRUE(wait_until([&] { return s.stats().num_open_connections == 0; }, 2000ms));
  expect_canary(s.port());
}

// ---------------------------------------------------------------- timeouts

TEST(HttpServerTest, HeaderBodyAndIdleTimeouts) {
  HttpServerOptions o = TestServer::options();
  o.header_timeout = 300ms;
  o.body_timeout = 300ms;
  o.idle_timeout = 300ms;
  TestServer s(o);
  {
    // A partial head: 408, then closed.
    RawClient c(s.port());
    ASSERT_TRUE(c.send_all("GET /hello HTTP/1.1\r\nHo"));
    std::optional<RawResponse> r = c.read_response(3000ms);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c.wait_closed(3000ms));
  }
  {
    // A partial body: 408.
    RawClient c(s.port());
    ASSERT_TRUE(c.send_all("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc"));
    std::optional<RawResponse> r = c.read_response(3000ms);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c.wait_closed(3000ms));
  }
  {
    // Nothing at all, or nothing after a response: closed quietly.
    RawClient silent(s.port());
    RawClient idle(s.port());
    ASSERT_TRUE(idle.send_all(kHello));
    ASSERT_TRUE(idle.read_response().has_value());
    EXPECT_TRUE(silent.wait_closed(3000ms));
    EXPECT_TRUE(idle.wait_closed(3000ms));
    EXPECT_EQ(silent.received_after_close(), "");
    EXPECT_EQ(idle.received_after_close(), "");
  }
  {
    // A slow but steady reader of a slow stream is not an idle connection.
    RawClient c(s.port());
    ASSERT_TRUE(c.send_all("GET /sse?n=4&ms=200 HTTP/1.1\r\nHost: t\r\n\r\n"));
    std::optional<RawResponse> r = c.read_response(5000ms);
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->chunks.size(), 4u);
  }
  EXPECT_GE(s.stats().num_timeouts, 4);
  expect_canary(s.port());
}

TEST(HttpServerTest, SixHundredSlowClientsDoNotStallACanary) {
  TestServer s(TestServer::options());
  std::vector<RawClient> slow;
  for (int i = 0; i < 600; ++i) {
    slow.emplace_back(s.port());
    ASSERT_TRUE(slow.back().is_connected());
  }
  const std::string head = "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n";
  // Each drips its head a byte at a time.
  for (size_t b = 0; b < 12; ++b) {
    for (RawClient& c : slow) c.send_all(head.substr(b, 1));
    expect_canary(s.port());
  }
  expect_canary(s.port());
}

TEST(HttpServerTest, TwoThousandIdleSocketsDoNotStallACanary) {
  TestServer s(TestServer::options());
  std::vector<RawClient> idle;
  for (int i = 0; i < 2000; ++i) {
    idle.emplace_back(s.port());
    ASSERT_TRUE(idle.back().is_connected());
  }
  ASSERT_TRUE(wait_until([&] { return s.stats().num_open_connections >= 2000; }, 10000ms));
  expect_canary(s.port());
}

TEST(HttpServerTest, FiveThousandIdleConnectionsAndACanaryUnderASecond) {
  Result<uint64_t> limit = raise_open_file_limit(12000);
  if (!limit.is_ok()) GTEST_SKIP() << limit.status().message();
  TestServer s(TestServer::options());
  expect_canary(s.port());
  const int64_t rss_before = rss_kib();
  std::vector<RawClient> idle;
  idle.reserve(5000);
  for (int i = 0; i < 5000; ++i) {
    idle.emplace_back(s.port());
    ASSERT_TRUE(idle.back().is_connected()) << i;
  }
  ASSERT_TRUE(wait_until([&] { return s.stats().num_open_connections >= 5000; }, 20000ms));
  // Half of them have been served once and wait as keep-alive connections.
  for (size_t i = 0; i < idle.size(); i += 2) idle[i].send_all(kHello);
  for (size_t i = 0; i < idle.size(); i += 2) ASSERT_TRUE(idle[i].read_response().has_value());
  const int64_t rss_after = rss_kib();
  const Clock::time_point t0 = Clock::now();
  expect_canary(s.port(), 1000ms);
  const double canary_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  EXPECT_TRUE(wait_until([&] { return s.stats().num_open_connections == 5000; }, 2000ms));
  std::printf(
      "[ rss ] 5000 idle connections: RSS %lld -> %lld KiB (+%lld KiB, %.2f KiB each, "
      "client side included); canary %.1f ms\n",
      static_cast<long long>(rss_before), static_cast<long long>(rss_after),
      static_cast<long long>(rss_after - rss_before),
      static_cast<double>(rss_after - rss_before) / 5000, canary_ms);
  ::testing::Test::RecordProperty("rss_5000_idle_kib", std::to_string(rss_after - rss_before));
  // A leak detector, not a measurement: a receive buffer (16 KiB) kept per
  // idle connection would break it.
  EXPECT_LT(rss_after - rss_before, 5000 * 8 * kRssSlack);
}

TEST(HttpServerTest, OneHundredFiftyOneMegabyteBodiesDoNotGrowRss) {
  TestServer s(TestServer::options());
  const std::string request = post("/size", std::string(1 << 20, 'm'));
  // Warm up (first allocations of the arenas), then measure.
  ASSERT_TRUE(one_shot(s.port(), request).has_value());
  const int64_t rss_before = rss_kib();
  std::vector<std::thread> threads;
  std::atomic<int> num_ok{0};
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      RawClient c(s.port());
      for (int i = 0; i < 50; ++i) {
        c.send_all(request);
        std::optional<RawResponse> r = c.read_response();
        if (r && r->body == "1048576") num_ok.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  const int64_t rss_after = rss_kib();
  EXPECT_EQ(num_ok.load(), 150);
  std::printf("[ rss ] 150 x 1 MB bodies: RSS %lld -> %lld KiB (+%lld KiB)\n",
              static_cast<long long>(rss_before), static_cast<long long>(rss_after),
              static_cast<long long>(rss_after - rss_before));
  ::testing::Test::RecordProperty("rss_150_bodies_kib", std::to_string(rss_after - rss_before));
  EXPECT_LT(rss_after - rss_before, (64 << 10) * kRssSlack);  // leak detector: < 64 MiB
}

// ---------------------------------------------------------------- connection limits

TEST(HttpServerTest, PastMaxConnectionsNewOnesGetA503) {
  HttpServerOptions o = TestServer::options();
  o.max_connections = 4;
  TestServer s(o);
  std::vector<RawClient> held;
  for (int i = 0; i < 4; ++i) {
    held.emplace_back(s.port());
    ASSERT_TRUE(held.back().send_all(kHello));
    ASSERT_TRUE(held.back().read_response().has_value());
  }
  RawClient extra(s.port());
  std::optional<RawResponse> r = extra.read_response(2000ms);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "503 Service Unavailable: too many connections\n");
  EXPECT_TRUE(extra.wait_closed());
  EXPECT_EQ(s.stats().num_refused, 1);
  // The others are not disturbed.
  for (RawClient& c : held) {
    ASSERT_TRUE(c.send_all(kHello));
    ASSERT_TRUE(c.read_response().has_value());
  }
  // A closed one frees its slot.
  held.pop_back();
  ASSERT_TRUE(wait_until([&] { return s.stats().num_open_connections == 3; }, 2000ms));
  expect_canary(s.port());
}

// ---------------------------------------------------------------- lifecycle

TEST(HttpServerTest, BindingABusyPortIsAOneLineError) {
  TestServer s(TestServer::options());
  HttpServerOptions o = TestServer::options();
  o.port = s.port();
  HttpServer second(o, Router{});
  const Status st = second.bind();
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("127.0.0.1:" + std::to_string(s.port())), std::string::npos)
      << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
  EXPECT_FALSE(second.start().is_ok());
  expect_canary(s.port());
}

TEST(HttpServerTest, BadOptionsAreRefusedByBind) {
  HttpServerOptions o = TestServer::options();
  o.num_io_threads = 0;
  HttpServer a(o, Router{});
  EXPECT_FALSE(a.bind().is_ok());
  o = TestServer::options();
  o.host = "not a host name";
  HttpServer b(o, Router{});
  EXPECT_FALSE(b.bind().is_ok());
  // Worker routes need worker threads.
  o = TestServer::options();
  o.num_worker_threads = 0;
  Router r;
  r.add(
      "GET", "/w", [](HttpRequest, ResponsePtr) {}, RunOn::kWorker);
  HttpServer c(o, std::move(r));
  ASSERT_TRUE(c.bind().is_ok());
  EXPECT_FALSE(c.start().is_ok());
}

TEST(HttpServerTest, StopAcceptingDrainsIdleConnectionsAndFinishesInFlightOnes) {
  TestServer s(TestServer::options());
  RawClient idle(s.port());
  ASSERT_TRUE(idle.send_all(kHello));
  ASSERT_TRUE(idle.read_response().has_value());
  RawClient busy(s.port());
  ASSERT_TRUE(busy.send_all("GET /sse?n=6&ms=50 HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(busy.read_head().has_value());
  s.server().stop_accepting();
  EXPECT_TRUE(idle.wait_closed(2000ms));
  // New connections are refused by the kernel.
  EXPECT_TRUE(wait_until([&] { return !RawClient(s.port()).is_connected(); }, 2000ms));
  // The stream runs to its end, then the connection closes.
  for (int i = 0; i < 6; ++i) EXPECT_EQ(busy.read_chunk(), "data: " + std::to_string(i) + "\n\n");
  EXPECT_EQ(busy.read_chunk(), "");
  EXPECT_TRUE(busy.wait_closed(2000ms));
}

TEST(HttpServerTest, StopClosesEverythingAndDisconnectsHandlers) {
  TestServer s(TestServer::options());
  RawClient a(s.port());
  RawClient b(s.port());
  ASSERT_TRUE(a.send_all("GET /hang HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(b.send_all("GET /sse-hang HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(s.wait_hanging(2));
  const Clock::time_point t0 = Clock::now();
  // From another thread, as a signal handler's thread would.
  std::thread stopper([&] { s.server().stop(); });
  stopper.join();
  EXPECT_LT(Clock::now() - t0, 3000ms);
  EXPECT_EQ(s.num_disconnects(), 2);
  EXPECT_TRUE(a.wait_closed(1000ms));
  EXPECT_TRUE(b.wait_closed(1000ms));
  s.server().stop();  // idempotent
}

TEST(HttpServerTest, StopRightAfterStartDoesNotHang) {
  for (int i = 0; i < 20; ++i) {
    HttpServer server(TestServer::options(), Router{});
    ASSERT_TRUE(server.bind().is_ok());
    ASSERT_TRUE(server.start().is_ok());
    std::thread t([&] {
      server.stop_accepting();
      server.stop();
    });
    t.join();
  }
  // Stop without start, and destruction without stop.
  HttpServer unstarted(TestServer::options(), Router{});
  ASSERT_TRUE(unstarted.bind().is_ok());
  unstarted.stop();
  HttpServer running(TestServer::options(), Router{});
  ASSERT_TRUE(running.bind().is_ok());
  ASSERT_TRUE(running.start().is_ok());
}

TEST(HttpServerTest, AResponseHandleOutlivesTheServer) {
  ResponsePtr kept;
  {
    Router r;
    r.add("GET", "/keep", [&kept](HttpRequest, ResponsePtr res) { kept = std::move(res); });
    HttpServer server(TestServer::options(), std::move(r));
    ASSERT_TRUE(server.bind().is_ok());
    ASSERT_TRUE(server.start().is_ok());
    RawClient c(server.port());
    ASSERT_TRUE(c.send_all("GET /keep HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(wait_until([&] { return server.stats().num_requests == 1; }, 2000ms));
  }
  ASSERT_NE(kept, nullptr);
  EXPECT_TRUE(kept->is_disconnected());
  EXPECT_FALSE(kept->send(200, "text/plain", "late"));
  bool called = false;
  kept->on_disconnect([&] { called = true; });
  EXPECT_TRUE(called);
  kept.reset();
}

}  // namespace
}  // namespace strata::http::testing
