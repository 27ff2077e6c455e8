#include "disagg/kv_transfer_protocol.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace strata::disagg {
namespace {

KvAsk sample_ask() {
  KvAsk a;
  a.fingerprint.digest[0] = 7;
  a.fingerprint.digest[31] = 9;
  a.chunk_tokens = 4;
  a.first_chunk = 1;
  a.end_chunk = 3;
  a.cache_salt = "tenant";
  for (int32_t i = 0; i < 12; ++i) a.tokens.push_back(100 + i);
  return a;
}

Result<KvAsk> round_trip(const std::vector<uint8_t>& bytes) {
  STRATA_ASSIGN_OR_RETURN(KvAskHeader h, decode_ask_header(bytes));
  return decode_ask_body(h, std::span(bytes).subspan(kAskHeaderBytes));
}

TEST(KvTransferProtocol, AskRoundTrips) {
  const KvAsk a = sample_ask();
  const std::vector<uint8_t> bytes = encode_ask(a);
  ASSERT_EQ(bytes.size(), kAskHeaderBytes + a.cache_salt.size() + a.tokens.size() * 4);
  Result<KvAsk> b = round_trip(bytes);
  ASSERT_TRUE(b.is_ok()) << b.status().message();
  EXPECT_EQ(b->fingerprint, a.fingerprint);
  EXPECT_EQ(b->chunk_tokens, 4);
  EXPECT_EQ(b->first_chunk, 1);
  EXPECT_EQ(b->end_chunk, 3);
  EXPECT_EQ(b->cache_salt, "tenant");
  EXPECT_EQ(b->tokens, a.tokens);
}

TEST(KvTransferProtocol, MalformedAsksAreNamedErrors) {
  const std::vector<uint8_t> good = encode_ask(sample_ask());
  auto expect_error = [](std::vector<uint8_t> bytes, const std::string& what) {
    Result<KvAsk> r = round_trip(bytes);
    ASSERT_FALSE(r.is_ok()) << what;
    EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status().message();
  };
  expect_error(std::vector<uint8_t>(good.begin(), good.begin() + 10), "truncated header");
  std::vector<uint8_t> b = good;
  b[0] = 'X';
  expect_error(b, "bad magic");
  b = good;
  b[8] = 99;
  expect_error(b, "unsupported version");
  b = good;
  b[16] = 3;  // first_chunk == end_chunk
  expect_error(b, "chunk range");
  b = good;
  b[20] = 0xff;
  b[21] = 0xff;
  b[22] = 0xff;  // end_chunk * chunk_tokens beyond the bound
  expect_error(b, "chunk range");
  b = good;
  b[12] = 0;  // chunk_tokens 0
  expect_error(b, "chunk_tokens");
  b = good;
  b[25] = 0x20;  // salt of 8 KiB
  expect_error(b, "cache salt too long");
  b = good;
  b[28] = 1;
  expect_error(b, "reserved");
  b = good;
  b.pop_back();
  expect_error(b, "body size mismatch");
  b = good;
  b.back() = 0x80;  // the last token's top byte: negative
  expect_error(b, "negative token id");
}

TEST(KvTransferProtocol, ReplyRoundTripsAndSanitizesRates) {
  KvReplyHeader r;
  r.status = KvReplyStatus::kWrongModel;
  r.queue_delay_s = 0.25;
  r.prefill_s_per_token = 1e-3;
  const auto bytes = encode_reply_header(r);
  Result<KvReplyHeader> d = decode_reply_header(bytes);
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->status, KvReplyStatus::kWrongModel);
  EXPECT_DOUBLE_EQ(d->queue_delay_s, 0.25);
  EXPECT_DOUBLE_EQ(d->prefill_s_per_token, 1e-3);

  r.status = KvReplyStatus::kOk;
  r.queue_delay_s = std::numeric_limits<double>::quiet_NaN();
  r.prefill_s_per_token = -1.0;
  d = decode_reply_header(encode_reply_header(r));
  ASSERT_TRUE(d.is_ok());
  EXPECT_EQ(d->queue_delay_s, 0.0);
  EXPECT_EQ(d->prefill_s_per_token, 0.0);

  auto bad = encode_reply_header(r);
  bad[8] = 42;
  EXPECT_FALSE(decode_reply_header(bad).is_ok());
  bad = encode_reply_header(r);
  bad[1] = 'x';
  EXPECT_FALSE(decode_reply_header(bad).is_ok());
  EXPECT_FALSE(decode_reply_header(std::span(bad).first(5)).is_ok());
}

TEST(KvTransferProtocol, FrameIndex) {
  for (uint32_t v : {0u, 1u, 255u, 65536u, kEndOfChunks}) {
    const auto b = encode_frame_index(v);
    EXPECT_EQ(decode_frame_index(b), v);
  }
}

}  // namespace
}  // namespace strata::disagg
