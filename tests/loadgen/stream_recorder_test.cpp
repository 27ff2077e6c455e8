// StreamRecorder: token arrivals from completions and chat streams, usage,
// errors, missing [DONE], and the spreading of merged chunks.
#include "loadgen/stream_recorder.h"

#include <gtest/gtest.h>

namespace strata::loadgen {
namespace {

std::string chunk(const std::string& text) {
  return "data: {\"choices\":[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":null}]}\n\n";
}

TEST(StreamRecorder, CompletionStreamWithUsage) {
  StreamRecorder r(/*start_s=*/1.0, /*dataset_prompt_tokens=*/7, /*keep_text=*/true);
  r.on_status(200);
  EXPECT_TRUE(r.on_bytes(chunk("a"), 1.5));
  EXPECT_TRUE(r.on_bytes(chunk("b") + chunk(""), 1.75));  // empty text is not a token
  EXPECT_TRUE(r.on_bytes(chunk("c"), 2.0));
  EXPECT_TRUE(r.on_bytes(
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\n"
      "data: [DONE]\n\n",
      2.1));
  const RequestOutcome o = r.finish(2.25, "");
  EXPECT_TRUE(o.is_success) << o.error;
  EXPECT_DOUBLE_EQ(o.ttft_s, 0.5);
  EXPECT_DOUBLE_EQ(o.e2e_s, 1.25);
  ASSERT_EQ(o.itls_s.size(), 2u);
  EXPECT_NEAR(o.itls_s[0], 0.25, 1e-12);
  EXPECT_NEAR(o.itls_s[1], 0.25, 1e-12);
  EXPECT_EQ(o.num_prompt_tokens, 9);
  EXPECT_EQ(o.num_output_tokens, 3);
  EXPECT_EQ(o.num_content_chunks, 3);
  EXPECT_EQ(o.generated_text, "abc");
  EXPECT_DOUBLE_EQ(o.tpot_s(), (1.25 - 0.5) / 2);
}

TEST(StreamRecorder, ChatRoleChunkIsNotAToken) {
  StreamRecorder r(0.0, -1, true);
  r.on_status(200);
  EXPECT_TRUE(r.on_bytes(
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n", 0.1));
  EXPECT_TRUE(r.on_bytes("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n", 0.3));
  EXPECT_TRUE(
      r.on_bytes("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\n", 0.4));
  EXPECT_TRUE(r.on_bytes("data: [DONE]\n\n", 0.4));
  const RequestOutcome o = r.finish(0.5, "");
  EXPECT_TRUE(o.is_success);
  EXPECT_DOUBLE_EQ(o.ttft_s, 0.3);
  EXPECT_EQ(o.num_output_tokens, 1);  // no usage: counted chunks
  EXPECT_EQ(o.num_prompt_tokens, -1);
  EXPECT_EQ(o.generated_text, "Hi");
}

TEST(StreamRecorder, MergedChunksAreSpreadOverUsageTokens) {
  StreamRecorder r(0.0, 4, false);
  r.on_status(200);
  EXPECT_TRUE(r.on_bytes(chunk("a"), 1.0));
  EXPECT_TRUE(r.on_bytes(chunk("bcd"), 1.6));  // three tokens in one chunk
  EXPECT_TRUE(r.on_bytes(chunk("e"), 1.8));
  EXPECT_TRUE(r.on_bytes(
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":5}}\n\n"
      "data: [DONE]\n\n",
      1.9));
  const RequestOutcome o = r.finish(1.9, "");
  ASSERT_TRUE(o.is_success);
  // Gaps 0.6 and 0.2 over 4 samples: 2 parts each.
  ASSERT_EQ(o.itls_s.size(), 4u);
  EXPECT_NEAR(o.itls_s[0], 0.3, 1e-12);
  EXPECT_NEAR(o.itls_s[1], 0.3, 1e-12);
  EXPECT_NEAR(o.itls_s[2], 0.1, 1e-12);
  EXPECT_NEAR(o.itls_s[3], 0.1, 1e-12);
}

TEST(SpreadItls, UnevenSplitGivesRemainderToEarlierGaps) {
  const std::vector<double> s = spread_itls({0.3, 0.2}, 5);  // 3 + 2 parts
  ASSERT_EQ(s.size(), 5u);
  EXPECT_NEAR(s[0], 0.1, 1e-12);
  EXPECT_NEAR(s[2], 0.1, 1e-12);
  EXPECT_NEAR(s[3], 0.1, 1e-12);
  EXPECT_EQ(spread_itls({0.3, 0.2}, 2), (std::vector<double>{0.3, 0.2}));
}

TEST(StreamRecorder, HttpErrorKeepsTheServerMessage) {
  StreamRecorder r(0.0, 3, false);
  r.on_status(400);
  EXPECT_TRUE(r.on_bytes(
      "{\"error\":{\"message\":\"bad token id\",\"type\":\"invalid_request_error\"}}", 0.1));
  const RequestOutcome o = r.finish(0.1, "");
  EXPECT_FALSE(o.is_success);
  EXPECT_EQ(o.error, "HTTP 400: bad token id");
}

TEST(StreamRecorder, ErrorEventMissingDoneAndTransportErrorsFail) {
  {
    StreamRecorder r(0.0, 1, false);
    r.on_status(200);
    EXPECT_TRUE(r.on_bytes(chunk("a"), 0.1));
    EXPECT_FALSE(r.on_bytes("data: {\"error\":{\"message\":\"engine died\"}}\n\n", 0.2));
    const RequestOutcome o = r.finish(0.2, "");
    EXPECT_FALSE(o.is_success);
    EXPECT_NE(o.error.find("engine died"), std::string::npos);
  }
  {
    StreamRecorder r(0.0, 1, false);
    r.on_status(200);
    EXPECT_TRUE(r.on_bytes(chunk("a"), 0.1));
    const RequestOutcome o = r.finish(0.2, "");
    EXPECT_FALSE(o.is_success);
    EXPECT_EQ(o.error, "stream ended before data: [DONE]");
  }
  {
    StreamRecorder r(0.0, 1, false);
    const RequestOutcome o = r.finish(0.2, "HTTP client: Connection");
    EXPECT_FALSE(o.is_success);
    EXPECT_EQ(o.error, "HTTP client: Connection");
  }
  {
    StreamRecorder r(0.0, 1, false);
    r.on_status(200);
    EXPECT_FALSE(r.on_bytes("data: not json\n\n", 0.1));
    EXPECT_FALSE(r.finish(0.1, "").is_success);
  }
  {
    StreamRecorder r(0.0, 1, false);
    r.on_status(200);
    EXPECT_TRUE(r.on_bytes("data: [DONE]\n\n", 0.1));
    const RequestOutcome o = r.finish(0.1, "");
    EXPECT_FALSE(o.is_success);
    EXPECT_EQ(o.error, "stream carried no output token");
  }
}

TEST(StreamRecorder, TokensWithoutVisibleTextUseTheFirstChoiceChunk) {
  StreamRecorder r(0.0, 2, false);
  r.on_status(200);
  EXPECT_TRUE(
      r.on_bytes("data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],"
                 "\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":16}}\n\ndata: [DONE]\n\n",
                 0.25));
  const RequestOutcome o = r.finish(0.5, "");
  EXPECT_TRUE(o.is_success) << o.error;
  EXPECT_DOUBLE_EQ(o.ttft_s, 0.25);
  EXPECT_EQ(o.num_output_tokens, 16);
  EXPECT_TRUE(o.itls_s.empty());
}

}  // namespace
}  // namespace strata::loadgen
