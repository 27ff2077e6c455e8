// Response pieces: usage, logprobs shapes, finish reasons, SSE frames.
#include "server/openai_response.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::server {
namespace {

using nlohmann::json;

std::string fake_text(int32_t id) {
  return id == 9 ? std::string("\xe4\xb8") : "t" + std::to_string(id);
}

std::vector<SampleResult> results() {
  SampleResult a{3, -0.5f, {{3, -0.5f}, {4, -1.5f}, {5, -2.0f}}};
  SampleResult b{9, -0.25f, {{9, -0.25f}, {3, -3.0f}}};
  return {a, b};
}

TEST(OpenAiResponseTest, Usage) {
  const json u = usage_json(TokenUsage{10, 4, 8});
  EXPECT_EQ(u["prompt_tokens"], 10);
  EXPECT_EQ(u["completion_tokens"], 4);
  EXPECT_EQ(u["total_tokens"], 14);
  EXPECT_EQ(u["prompt_tokens_details"]["cached_tokens"], 8);
}

TEST(OpenAiResponseTest, ChatLogprobs) {
  const std::vector<int32_t> ids = {3, 9};
  const json j = chat_logprobs_json(ids, results(), 2, fake_text);
  ASSERT_EQ(j["content"].size(), 2u);
  EXPECT_EQ(j["content"][0]["token"], "t3");
  EXPECT_FLOAT_EQ(j["content"][0]["logprob"].get<float>(), -0.5f);
  EXPECT_EQ(j["content"][0]["bytes"], json({116, 51}));
  EXPECT_EQ(j["content"][0]["top_logprobs"].size(), 2u);    // capped at num_top
  EXPECT_EQ(j["content"][1]["bytes"], json({0xe4, 0xb8}));  // half a code point, as bytes
  // Invalid UTF-8 in token text does not make serialization throw.
  EXPECT_NE(dump_json(j).find("\xef\xbf\xbd"), std::string::npos);
  EXPECT_EQ(chat_logprobs_json(ids, results(), 0, fake_text)["content"][0]["top_logprobs"].size(),
            0u);
}

TEST(OpenAiResponseTest, CompletionLogprobs) {
  const std::vector<int32_t> ids = {3, 9};
  size_t offset = 5;
  const json j = completion_logprobs_json(ids, results(), 3, fake_text, &offset);
  EXPECT_EQ(j["tokens"], json({"t3", "\xe4\xb8"}));
  EXPECT_EQ(j["text_offset"], json({5, 7}));
  EXPECT_EQ(offset, 9u);
  EXPECT_EQ(j["top_logprobs"][0].size(), 3u);
  EXPECT_EQ(j["top_logprobs"][1].size(), 2u);  // fewer alternatives than asked
  // Mismatched lengths: only the common prefix.
  size_t o2 = 0;
  EXPECT_EQ(
      completion_logprobs_json(std::vector<int32_t>{3}, results(), 1, fake_text, &o2)["tokens"]
          .size(),
      1u);
}

TEST(OpenAiResponseTest, FinishReasonsAndFrames) {
  EXPECT_STREQ(finish_reason_text(FinishReason::kStop), "stop");
  EXPECT_STREQ(finish_reason_text(FinishReason::kLength), "length");
  EXPECT_EQ(finish_reason_text(FinishReason::kNone), nullptr);
  EXPECT_EQ(sse_frame(json{{"a", 1}}), "data: {\"a\":1}\n\n");
}

}  // namespace
}  // namespace strata::server
