// strata's native chat-template renderer against @huggingface/jinja, byte
// for byte, on the goldens of scripts/gen_chat_template_goldens.mjs.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "server/chat_template.h"

namespace strata::server {
namespace {

TEST(ChatTemplateGoldenTest, MatchesJinjaRendering) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) +
                   "/tests/server/data/chat_template_goldens.json");
  ASSERT_TRUE(in.good());
  const nlohmann::json goldens = nlohmann::json::parse(in);
  ASSERT_GE(goldens["cases"].size(), 40u);
  for (const nlohmann::json& c : goldens["cases"]) {
    std::vector<ChatMessage> messages;
    for (const nlohmann::json& m : c["messages"]) {
      messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
    }
    const ChatTemplate t = ChatTemplate::detect(c["source"].get<std::string>());
    EXPECT_FALSE(t.is_fallback()) << c["template"];
    EXPECT_EQ(t.render(messages, c["add_generation_prompt"].get<bool>()),
              c["expected"].get<std::string>())
        << c["template"] << " / " << c["chat"]
        << " / add_generation_prompt=" << c["add_generation_prompt"];
  }
}

}  // namespace
}  // namespace strata::server
