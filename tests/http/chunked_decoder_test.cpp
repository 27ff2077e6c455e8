#include "http/chunked_decoder.h"

#include <gtest/gtest.h>

#include <string>

namespace strata::http {
namespace {

using State = ChunkedDecoder::State;

struct Decoded {
  State state;
  std::string body;
  size_t consumed = 0;
  int status = 0;
};

Decoded decode(std::string_view in, uint64_t max_body = 1 << 20) {
  ChunkedDecoder d(max_body, 256);
  Decoded out;
  out.state = d.feed(in, &out.consumed, &out.body);
  out.status = d.error().status;
  return out;
}

// Byte by byte, as a slow client sends it.
Decoded decode_bytewise(std::string_view in, uint64_t max_body = 1 << 20) {
  ChunkedDecoder d(max_body, 256);
  Decoded out;
  out.state = State::kNeedMore;
  for (size_t i = 0; i < in.size() && out.state == State::kNeedMore; ++i) {
    size_t used = 0;
    out.state = d.feed(in.substr(i, 1), &used, &out.body);
    out.consumed += used;
  }
  out.status = d.error().status;
  return out;
}

void expect_error(std::string_view in, int status) {
  EXPECT_EQ(decode(in).state, State::kError) << in;
  EXPECT_EQ(decode(in).status, status) << in;
  EXPECT_EQ(decode_bytewise(in).state, State::kError) << in;
  EXPECT_EQ(decode_bytewise(in).status, status) << in;
}

TEST(ChunkedDecoderTest, DecodesChunks) {
  const std::string in = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET /next";
  for (const Decoded& d : {decode(in), decode_bytewise(in)}) {
    ASSERT_EQ(d.state, State::kDone);
    EXPECT_EQ(d.body, "hello world");
    EXPECT_EQ(d.consumed, in.size() - 9);  // the pipelined request is left
  }
}

TEST(ChunkedDecoderTest, HexSizesAndExtensionsAndTrailers) {
  const std::string in = "A;name=value\r\n0123456789\r\n0\r\nX-Trailer: t\r\nY: u\r\n\r\n";
  for (const Decoded& d : {decode(in), decode_bytewise(in)}) {
    ASSERT_EQ(d.state, State::kDone);
    EXPECT_EQ(d.body, "0123456789");
    EXPECT_EQ(d.consumed, in.size());
  }
}

TEST(ChunkedDecoderTest, NeedsMoreUntilTheEnd) {
  EXPECT_EQ(decode("5\r\nhel").state, State::kNeedMore);
  EXPECT_EQ(decode("5\r\nhello\r\n0\r\n").state, State::kNeedMore);
  EXPECT_EQ(decode("5\r\nhello\r\n0\r\n\r").state, State::kNeedMore);
}

TEST(ChunkedDecoderTest, BadChunkSizes) {
  expect_error("zz\r\n", 400);
  expect_error("\r\n", 400);
  expect_error("-1\r\n", 400);
  expect_error(" 5\r\nhello\r\n", 400);
  expect_error("5 \r\nhello\r\n", 400);
  expect_error("0x5\r\nhello\r\n", 400);
  expect_error("11111111111111111\r\n", 400);  // 17 hex digits
  expect_error("5\rhello", 400);
  expect_error("5\nhello", 400);
}

TEST(ChunkedDecoderTest, DataMustEndWithCrLf) {
  expect_error("5\r\nhelloX\r\n0\r\n\r\n", 400);
  expect_error("5\r\nhello\rX", 400);
}

TEST(ChunkedDecoderTest, ExtensionLimits) {
  expect_error("5;" + std::string(2000, 'e') + "\r\nhello\r\n", 400);
  expect_error(std::string("5;a\0b\r\n", 7), 400);
}

TEST(ChunkedDecoderTest, TrailerChecks) {
  expect_error("0\r\nX: a\r\n b\r\n\r\n", 400);  // folding
  expect_error(std::string("0\r\nX: a\0\r\n\r\n", 12), 400);
  expect_error("0\r\nX: a\nb\r\n\r\n", 400);
  expect_error("0\r\nX: " + std::string(300, 'a') + "\r\n\r\n", 400);
}

TEST(ChunkedDecoderTest, BodyLimitIs413OnTheSizeLine) {
  // The 16-byte limit: 10 + 6 fits, 10 + 7 does not, refused before its data.
  EXPECT_EQ(decode("a\r\n0123456789\r\n6\r\nabcdef\r\n0\r\n\r\n", 16).state, State::kDone);
  const Decoded d = decode("a\r\n0123456789\r\n7\r\n", 16);
  EXPECT_EQ(d.state, State::kError);
  EXPECT_EQ(d.status, 413);
  EXPECT_EQ(decode("ffffffffffffffff\r\n", 16).status, 413);
  EXPECT_EQ(decode("11;ext\r\n", 16).status, 413);
}

}  // namespace
}  // namespace strata::http
