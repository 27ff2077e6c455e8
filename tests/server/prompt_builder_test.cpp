// PromptBuilder: the prompt ids of chat and completions requests are the
// chat template's text encoded as the server always did; ids pass through;
// the errors come in the server's order.
#include "server/prompt_builder.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine/engine_test_util.h"

namespace strata::server {
namespace {

using nlohmann::json;
using strata::testing::peaky_model;

struct Builder {
  ChatTemplate tpl = *ChatTemplate::for_model(*peaky_model().tokenizer);
  PromptBuilder builder{*peaky_model().tokenizer, tpl};
  ProtocolLimits limits;
  Builder() {
    limits.vocab_size = peaky_model().tokenizer->vocab_size();
    limits.max_model_len = 256;
  }
};

TEST(PromptBuilder, ChatIsTheRenderedTemplateEncodedWithSpecials) {
  STRATA_REQUIRE_MODEL();
  Builder b;
  const json body{{"messages",
                   {{{"role", "system"}, {"content", "be brief"}},
                    {{"role", "user"}, {"content", "hello there"}}}},
                  {"user", "u1"},
                  {"cache_salt", "s"}};
  BuiltPrompt p;
  ASSERT_FALSE(b.builder.build(body, true, b.limits, "", &p));
  ChatTemplateInputs chat;
  chat.messages = nlohmann::ordered_json(body["messages"]);
  std::string text;
  ASSERT_FALSE(b.builder.chat_text(chat, &text));
  EXPECT_EQ(p.prompts.at(0), peaky_model().tokenizer->encode(text, true, true));
  EXPECT_EQ(p.params.user, "u1");
  EXPECT_EQ(p.params.cache_salt, "s");
  EXPECT_TRUE(p.is_chat);
  // Without the generation prompt the text differs.
  json no_gen = body;
  no_gen["add_generation_prompt"] = false;
  BuiltPrompt q;
  ASSERT_FALSE(b.builder.build(no_gen, true, b.limits, "", &q));
  chat.add_generation_prompt = false;
  std::string text_no_gen;
  ASSERT_FALSE(b.builder.chat_text(chat, &text_no_gen));
  EXPECT_NE(text, text_no_gen);
  EXPECT_EQ(q.prompts.at(0), peaky_model().tokenizer->encode(text_no_gen, true, true));
}

TEST(PromptBuilder, CompletionsEncodeTextAndPassIdsThrough) {
  STRATA_REQUIRE_MODEL();
  Builder b;
  BuiltPrompt p;
  ASSERT_FALSE(
      b.builder.build(json{{"prompt", "once upon"}, {"echo", true}}, false, b.limits, "", &p));
  EXPECT_EQ(p.prompts.at(0), peaky_model().tokenizer->encode("once upon", true, true));
  EXPECT_EQ(p.echo_texts.at(0), "once upon");
  BuiltPrompt ids;
  ASSERT_FALSE(b.builder.build(json{{"prompt", {5, 6, 7}}}, false, b.limits, "", &ids));
  EXPECT_EQ(ids.prompts.at(0), (std::vector<int32_t>{5, 6, 7}));
}

TEST(PromptBuilder, ErrorsComeInTheServersOrder) {
  STRATA_REQUIRE_MODEL();
  Builder b;
  BuiltPrompt p;
  auto e = b.builder.build(json{{"prompt", 5}}, false, b.limits, "m", &p);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  e = b.builder.build(json{{"prompt", "x"}, {"model", "other"}}, false, b.limits, "m", &p);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 404);
  // The router passes no model name: any model is accepted.
  EXPECT_FALSE(b.builder.build(json{{"prompt", "x"}, {"model", "other"}}, false, b.limits, "", &p));
  e = b.builder.build(json{{"prompt", json::array()}}, false, b.limits, "", &p);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "prompt");
}

TEST(PromptBuilder, TokenizeMatchesTheGenerationPrompt) {
  STRATA_REQUIRE_MODEL();
  Builder b;
  const nlohmann::ordered_json body = nlohmann::ordered_json::parse(
      R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true})");
  TokenizeRequest t;
  ASSERT_FALSE(parse_tokenize_request(body, b.limits, &t));
  std::vector<int32_t> tokenized;
  ASSERT_FALSE(b.builder.tokenize(t, &tokenized));
  BuiltPrompt p;
  ASSERT_FALSE(b.builder.build(body, true, b.limits, "", &p));
  EXPECT_EQ(tokenized, p.prompts.at(0));
  TokenizeRequest plain;
  plain.prompt = "plain";
  plain.add_special_tokens = false;
  ASSERT_FALSE(b.builder.tokenize(plain, &tokenized));
  EXPECT_EQ(tokenized, peaky_model().tokenizer->encode("plain", false, true));
}

}  // namespace
}  // namespace strata::server
