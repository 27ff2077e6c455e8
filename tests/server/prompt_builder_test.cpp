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
  ChatTemplate tpl = ChatTemplate::detect(peaky_model().tokenizer->chat_template());
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
  const std::vector<ChatMessage> m = {{"system", "be brief"}, {"user", "hello there"}};
  EXPECT_EQ(p.prompts.at(0), peaky_model().tokenizer->encode(b.tpl.render(m, true), true, true));
  EXPECT_EQ(p.params.user, "u1");
  EXPECT_EQ(p.params.cache_salt, "s");
  EXPECT_TRUE(p.is_chat);
  // Without the generation prompt the text differs.
  json no_gen = body;
  no_gen["add_generation_prompt"] = false;
  BuiltPrompt q;
  ASSERT_FALSE(b.builder.build(no_gen, true, b.limits, "", &q));
  EXPECT_EQ(q.prompts.at(0), peaky_model().tokenizer->encode(b.tpl.render(m, false), true, true));
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
  TokenizeRequest t;
  t.messages = {{"user", "hi"}};
  ChatRequest c;
  c.messages = t.messages;
  EXPECT_EQ(b.builder.tokenize(t), b.builder.chat_prompt(c));
  t.messages.clear();
  t.prompt = "plain";
  t.add_special_tokens = false;
  EXPECT_EQ(b.builder.tokenize(t), peaky_model().tokenizer->encode("plain", false, true));
}

}  // namespace
}  // namespace strata::server
