// The SSE parser on split and merged pieces, CRLF, comments, multi-line data
// and the [DONE] marker.
#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

namespace strata::loadgen {
namespace {

TEST(SseParser, MergedEventsInOnePiece) {
  SseParser p;
  auto ev = p.feed("data: {\"a\":1}\n\ndata: {\"a\":2}\n\ndata: [DONE]\n\n");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0], "{\"a\":1}");
  EXPECT_EQ(ev[1], "{\"a\":2}");
  EXPECT_TRUE(SseParser::is_done_marker(ev[2]));
  EXPECT_FALSE(SseParser::is_done_marker(ev[1]));
}

TEST(SseParser, EveryByteSplitGivesTheSameEvents) {
  const std::string body = "data: {\"x\":\"h\\u00e9\"}\r\n\r\n: keep-alive\n\ndata:[DONE]\r\n\r\n";
  SseParser whole;
  const auto expected = whole.feed(body);
  ASSERT_EQ(expected.size(), 2u);
  EXPECT_EQ(expected[1], "[DONE]");
  for (size_t cut = 0; cut <= body.size(); ++cut) {
    SseParser p;
    auto a = p.feed(body.substr(0, cut));
    auto b = p.feed(body.substr(cut));
    a.insert(a.end(), b.begin(), b.end());
    EXPECT_EQ(a, expected) << "cut at " << cut;
  }
  // One byte at a time.
  SseParser p;
  std::vector<std::string> all;
  for (char c : body) {
    auto e = p.feed(std::string_view(&c, 1));
    all.insert(all.end(), e.begin(), e.end());
  }
  EXPECT_EQ(all, expected);
}

TEST(SseParser, MultiLineDataCommentsAndOtherFields) {
  SseParser p;
  auto ev = p.feed("event: message\nid: 7\n: comment\ndata: line1\ndata: line2\nretry: 5\n\n");
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0], "line1\nline2");
  // A blank line without data dispatches nothing.
  EXPECT_TRUE(p.feed("\n\n: only a comment\n\n").empty());
}

TEST(SseParser, CrOnlyLineEndsAndCrLfSplitAcrossPieces) {
  SseParser p;
  auto a = p.feed("data: a\r");
  auto b = p.feed("\n\r");
  auto c = p.feed("\ndata: b\r\r");
  ASSERT_EQ(a.size() + b.size(), 1u);
  EXPECT_EQ((a.empty() ? b : a)[0], "a");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], "b");
}

TEST(SseParser, FinishReturnsAnUnterminatedEvent) {
  SseParser p;
  EXPECT_TRUE(p.feed("data: [DONE]").empty());
  EXPECT_EQ(p.finish(), "[DONE]");
  EXPECT_EQ(p.finish(), "");
}

}  // namespace
}  // namespace strata::loadgen
