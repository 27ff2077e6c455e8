#include "http/request_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace strata::http {
namespace {

using HeadState = RequestHeadParser::State;

struct Parsed {
  HeadState state;
  HttpRequest request;
  RequestHead head;
  HttpError error;
  size_t head_bytes = 0;
};

Parsed parse(std::string_view data, ParserLimits limits = {}) {
  RequestHeadParser p(limits);
  Parsed out;
  out.state = p.feed(data, &out.request);
  out.head = p.head();
  out.error = p.error();
  out.head_bytes = p.head_bytes();
  return out;
}

// Feeds one byte more each time, as a slow client would send it.
Parsed parse_bytewise(std::string_view data) {
  RequestHeadParser p;
  Parsed out;
  out.state = HeadState::kNeedMore;
  for (size_t i = 1; i <= data.size() && out.state == HeadState::kNeedMore; ++i) {
    out.state = p.feed(data.substr(0, i), &out.request);
  }
  out.head = p.head();
  out.error = p.error();
  out.head_bytes = p.head_bytes();
  return out;
}

void expect_head_error(std::string_view data, int status) {
  const Parsed p = parse(data);
  EXPECT_EQ(p.state, HeadState::kError) << data;
  EXPECT_EQ(p.error.status, status) << data << " -> " << p.error.message;
  const Parsed q = parse_bytewise(data);
  EXPECT_EQ(q.state, HeadState::kError) << data;
  EXPECT_EQ(q.error.status, status) << data;
}

TEST(RequestParserTest, ParsesAGetRequest) {
  const std::string req = "GET /v1/models?x=1 HTTP/1.1\r\nHost: h\r\nX-A:  b c \r\n\r\nREST";
  const Parsed p = parse(req);
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_EQ(p.head_bytes, req.size() - 4);
  EXPECT_EQ(p.request.method, "GET");
  EXPECT_EQ(p.request.target, "/v1/models?x=1");
  EXPECT_EQ(p.request.path, "/v1/models");
  EXPECT_EQ(p.request.query, "x=1");
  EXPECT_EQ(p.request.version_minor, 1);
  EXPECT_TRUE(p.request.keep_alive);
  ASSERT_EQ(p.request.headers.size(), 2u);
  EXPECT_EQ(p.request.header("x-a"), "b c");
  EXPECT_EQ(p.head.framing, BodyFraming::kNone);
}

TEST(RequestParserTest, ByteByByteGivesTheSameResult) {
  const std::string req = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello";
  const Parsed p = parse_bytewise(req);
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_EQ(p.head.framing, BodyFraming::kLength);
  EXPECT_EQ(p.head.content_length, 5u);
  EXPECT_EQ(p.head_bytes, req.size() - 5);
}

TEST(RequestParserTest, NeedsMoreUntilTheEmptyLine) {
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\n").state, HeadState::kNeedMore);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\n\r").state, HeadState::kNeedMore);
  EXPECT_EQ(parse("").state, HeadState::kNeedMore);
}

TEST(RequestParserTest, SkipsLeadingEmptyLines) {
  const Parsed p = parse("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_EQ(p.request.path, "/");
}

TEST(RequestParserTest, KeepAliveRules) {
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\n\r\n").request.keep_alive);
  EXPECT_TRUE(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Close\r\n\r\n")
                   .request.keep_alive);
  EXPECT_FALSE(parse("GET / HTTP/1.0\r\nConnection: close, keep-alive\r\n\r\n").request.keep_alive);
}

TEST(RequestParserTest, AbsoluteFormTargetIsTolerated) {
  Parsed p = parse("GET http://example.com:8000/v1/models?q HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_EQ(p.request.path, "/v1/models");
  EXPECT_EQ(p.request.query, "q");
  p = parse("GET HTTPS://example.com HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_EQ(p.request.path, "/");
}

TEST(RequestParserTest, BadTargets) {
  expect_head_error("GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_head_error("GET example.com:80 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_head_error("GET ftp://x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_head_error("GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_head_error("GET /a#frag HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_head_error("GET /caf\xc3\xa9 HTTP/1.1\r\nHost: h\r\n\r\n", 400);
}

TEST(RequestParserTest, MalformedRequestLines) {
  expect_head_error("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400);
  expect_head_error("GET /\r\nHost: h\r\n\r\n", 400);
  expect_head_error("G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.x\r\nHost: h\r\n\r\n", 400);
  expect_head_error("GET / http/1.1\r\nHost: h\r\n\r\n", 400);
  expect_head_error(std::string(40, 'A') + " / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
}

TEST(RequestParserTest, OtherVersionsAre505) {
  expect_head_error("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505);
  expect_head_error("GET / HTTP/0.9\r\n\r\n", 505);
}

TEST(RequestParserTest, LineEndingsMustBeCrLf) {
  expect_head_error("GET / HTTP/1.1\nHost: h\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1\r\nHost: h\n\n", 400);
  expect_head_error("GET / HTTP/1.1\rHost: h\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\r\n\r\n", 400);
  expect_head_error("\n", 400);
}

TEST(RequestParserTest, ControlBytesInTheHeadAre400) {
  expect_head_error(std::string("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\0b\r\n\r\n", 37), 400);
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\x7f\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\x01\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\nX\x02: a\r\n\r\n", 400);
  // HTAB inside a value and obs-text (bytes >= 0x80) are allowed.
  const Parsed p = parse("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\tb \xe9\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_EQ(p.request.header("X-A"), "a\tb \xe9");
}

TEST(RequestParserTest, ANulIsRejectedAsSoonAsItArrives) {
  RequestHeadParser p;
  HttpRequest r;
  const std::string partial("GET / HTTP/1.1\r\nX: a\0", 21);
  EXPECT_EQ(p.feed(partial, &r), HeadState::kError);
  EXPECT_EQ(p.error().status, 400);
}

TEST(RequestParserTest, MalformedFieldLines) {
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\nX-A : b\r\n\r\n", 400);  // space before colon
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\nnocolon\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\n: empty\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\nX(A): b\r\n\r\n", 400);
}

TEST(RequestParserTest, ObsoleteLineFoldingIs400) {
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\nX-A: b\r\n c\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1\r\nHost: h\r\nX-A: b\r\n\tc\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400);
}

TEST(RequestParserTest, ContentLengthRules) {
  Parsed p = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_EQ(p.head.framing, BodyFraming::kLength);
  EXPECT_EQ(p.head.content_length, 0u);
  p = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000000000\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kDone);  // the size limit is the server's call (413)
  EXPECT_EQ(p.head.content_length, 1000000000000u);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", 400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1x\r\n\r\n", 400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n", 400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1 2\r\n\r\n", 400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n", 400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n",
                    400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                    400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n",
                    400);
}

TEST(RequestParserTest, TransferEncodingRules) {
  Parsed p = parse("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_EQ(p.head.framing, BodyFraming::kChunked);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
                    400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400);
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n", 400);
  expect_head_error(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
      "chunked\r\n\r\n",
      400);
  expect_head_error(
      "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
  expect_head_error(
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400);
  expect_head_error("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
}

TEST(RequestParserTest, HostRules) {
  expect_head_error("GET / HTTP/1.1\r\n\r\n", 400);
  expect_head_error("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);
  EXPECT_EQ(parse("GET / HTTP/1.0\r\n\r\n").state, HeadState::kDone);
}

TEST(RequestParserTest, ExpectRules) {
  Parsed p =
      parse("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_TRUE(p.head.expects_continue);
  p = parse("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n");
  ASSERT_EQ(p.state, HeadState::kDone);
  EXPECT_FALSE(p.head.expects_continue);  // HTTP/1.0 clients do not wait for it
  expect_head_error("POST / HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n", 417);
}

TEST(RequestParserTest, TooManyHeadersIs431BeforeTheHeadEnds) {
  std::string req = "GET / HTTP/1.1\r\nHost: h\r\n";
  for (int i = 0; i < 99; ++i) req += "X: y\r\n";
  EXPECT_EQ(parse(req + "\r\n").state, HeadState::kDone);  // 100 fields
  req += "X: y\r\n";                                       // the 101st
  const Parsed p = parse(req);                             // no empty line yet
  EXPECT_EQ(p.state, HeadState::kError);
  EXPECT_EQ(p.error.status, 431);
}

TEST(RequestParserTest, HugeHeadIs431) {
  const std::string big(17 << 10, 'a');
  Parsed p = parse("GET / HTTP/1.1\r\nHost: h\r\nX: " + big);
  EXPECT_EQ(p.state, HeadState::kError);
  EXPECT_EQ(p.error.status, 431);
  p = parse("GET / HTTP/1.1\r\nHost: h\r\nX: " + big + "\r\n\r\n");
  EXPECT_EQ(p.state, HeadState::kError);
  EXPECT_EQ(p.error.status, 431);
  // Endless empty lines count too.
  std::string crlfs;
  for (int i = 0; i < 9000; ++i) crlfs += "\r\n";
  p = parse(crlfs);
  EXPECT_EQ(p.state, HeadState::kError);
  EXPECT_EQ(p.error.status, 431);
}

TEST(RequestParserTest, LimitsAreConfigurable) {
  ParserLimits small;
  small.max_headers = 2;
  small.max_header_bytes = 64;
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nA: b\r\n\r\n", small).state, HeadState::kDone);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nA: b\r\nC: d\r\n\r\n", small).error.status, 431);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: h\r\nA: " + std::string(64, 'b') + "\r\n\r\n", small)
                .error.status,
            431);
}

TEST(RequestParserTest, ResetParsesTheNextRequest) {
  RequestHeadParser p;
  HttpRequest r;
  ASSERT_EQ(p.feed("GET /a HTTP/1.1\r\nHost: h\r\n\r\n", &r), HeadState::kDone);
  p.reset();
  HttpRequest r2;
  ASSERT_EQ(p.feed("GET /b HTTP/1.1\r\nHost: h\r\n\r\n", &r2), HeadState::kDone);
  EXPECT_EQ(r2.path, "/b");
}

TEST(PercentDecodeTest, Decodes) {
  EXPECT_EQ(percent_decode("a%2Fb%20c"), "a/b c");
  EXPECT_EQ(percent_decode("plain"), "plain");
  EXPECT_FALSE(percent_decode("a%2"));
  EXPECT_FALSE(percent_decode("a%zz"));
  EXPECT_FALSE(percent_decode("a%00b"));
}

}  // namespace
}  // namespace strata::http
