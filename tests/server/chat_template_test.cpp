// Chat template detection and native rendering of the known families.
#include "server/chat_template.h"

#include <gtest/gtest.h>

namespace strata::server {
namespace {

const std::vector<ChatMessage> kMessages = {
    {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye "}};

TEST(ChatTemplateTest, ChatMl) {
  const ChatTemplate t = ChatTemplate::detect("{% for m in messages %}<|im_start|>...");
  EXPECT_EQ(t.kind(), ChatTemplateKind::kChatMl);
  EXPECT_FALSE(t.is_fallback());
  EXPECT_EQ(t.render(kMessages, true),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello<|im_end|>\n<|im_start|>user\nBye <|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(t.render({{"user", "x"}}, false), "<|im_start|>user\nx<|im_end|>\n");
}

TEST(ChatTemplateTest, FallbackIsChatMl) {
  const ChatTemplate t = ChatTemplate::detect("");
  EXPECT_TRUE(t.is_fallback());
  EXPECT_EQ(t.kind(), ChatTemplateKind::kChatMl);
  EXPECT_TRUE(ChatTemplate::detect("{{ weird }}").is_fallback());
}

TEST(ChatTemplateTest, Llama3) {
  const ChatTemplate t = ChatTemplate::detect("<|start_header_id|>' + message['role']");
  EXPECT_EQ(t.kind(), ChatTemplateKind::kLlama3);
  EXPECT_EQ(t.render({{"user", " Hi \n"}}, true),
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, Llama2AndMistral) {
  const ChatTemplate l2 = ChatTemplate::detect("[INST] <<SYS>>\\n");
  EXPECT_EQ(l2.kind(), ChatTemplateKind::kLlama2);
  EXPECT_EQ(l2.render(kMessages, true),
            "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello </s><s>[INST] Bye [/INST]");
  const ChatTemplate m = ChatTemplate::detect("{{ '[INST] ' + message['content'] }}");
  EXPECT_EQ(m.kind(), ChatTemplateKind::kMistral);
  EXPECT_EQ(m.render(kMessages, true),
            "[INST] Be brief.\n\nHi [/INST]Hello</s>[INST] Bye  [/INST]");  // not stripped
}

}  // namespace
}  // namespace strata::server

namespace strata::server {
namespace {

TEST(ChatTemplateTest, Llama31DateHeader) {
  const ChatTemplate t = ChatTemplate::detect(
      "<|start_header_id|>system<|end_header_id|>\\n\\nCutting Knowledge Date: December 2023");
  EXPECT_EQ(t.render({{"user", "Hi"}}, true),
            "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
            "2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>"
            "\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, GemmaAndPhi3) {
  const ChatTemplate g = ChatTemplate::detect("{{ '<start_of_turn>' + role }}");
  EXPECT_EQ(g.kind(), ChatTemplateKind::kGemma);
  EXPECT_EQ(g.render(kMessages, true),
            "<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello"
            "<end_of_turn>\n<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n");
  const ChatTemplate p = ChatTemplate::detect("{{'<|user|>\\n' + message['content'] + '<|end|>'}}");
  EXPECT_EQ(p.kind(), ChatTemplateKind::kPhi3);
  EXPECT_EQ(p.render({{"system", "S"}, {"user", "U"}}, true),
            "<|system|>\nS<|end|>\n<|user|>\nU<|end|>\n<|assistant|>\n");
}

}  // namespace
}  // namespace strata::server
