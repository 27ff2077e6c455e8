// ChatTemplateRenderer: what the template sees (as transformers'
// apply_chat_template passes it), continue_final_message, raise_exception,
// the BOS check, tool-call argument parsing, and concurrent renders.
#include "jinja/chat_template_renderer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace strata::jinja {
namespace {

using json = nlohmann::ordered_json;

const char* kChatMl =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

ChatTemplateRenderer make(const std::string& source, ChatTemplateOptions options = {}) {
  auto r = ChatTemplateRenderer::create(source, std::move(options));
  EXPECT_TRUE(r.is_ok()) << r.error().to_string();
  return std::move(r).value();
}

std::string render_ok(const ChatTemplateRenderer& r, const json& messages,
                      const ChatRenderParams& params = {}) {
  auto out = r.render(messages, params);
  EXPECT_TRUE(out.is_ok()) << out.error().to_string();
  return out.is_ok() ? out.value() : std::string();
}

const json kChat = json::parse(R"([{"role": "user", "content": "Hi"},
                                   {"role": "assistant", "content": "The answer is"}])");

TEST(ChatTemplateRenderer, RendersMessagesAndGenerationPrompt) {
  const auto r = make(kChatMl);
  ChatRenderParams params;
  params.add_generation_prompt = true;
  EXPECT_EQ(render_ok(r, json::parse(R"([{"role": "user", "content": "Hi"}])"), params),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render_ok(r, json::parse(R"([{"role": "user", "content": "Hi"}])")),
            "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateRenderer, SpecialTokensToolsDocumentsAndKwargs) {
  ChatTemplateOptions options;
  options.bos_token = "<s>";
  options.eos_token = "</s>";
  options.special_tokens = {{"pad_token", "<pad>"}};
  const auto r = make(
      "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token is defined }}|"
      "{{ tools is defined }}/{{ tools is none }}|{{ documents is none }}|{{ enable_thinking }}|"
      "{{ add_generation_prompt }}|{{ tools|length if tools else 0 }}",
      options);
  EXPECT_EQ(render_ok(r, json::array()), "<s>|</s>|<pad>|False|True/True|True||False|0");
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "f"}}])");
  const json kwargs = json::parse(R"({"enable_thinking": false, "eos_token": "<eos>"})");
  ChatRenderParams params;
  params.tools = &tools;
  params.chat_template_kwargs = &kwargs;
  EXPECT_EQ(render_ok(r, json::array(), params),
            "<s>|<eos>|<pad>|False|True/False|True|False|False|1");
  // Unset special tokens are not passed at all.
  const auto bare = make("[{{ bos_token }}][{{ bos_token is defined }}]");
  EXPECT_EQ(render_ok(bare, json::array()), "[][False]");
}

TEST(ChatTemplateRenderer, RejectsBadArguments) {
  const auto r = make(kChatMl);
  const json kwargs = json::parse(R"({"messages": []})");
  ChatRenderParams params;
  params.chat_template_kwargs = &kwargs;
  EXPECT_EQ(r.render(kChat, params).error().kind(), ErrorKind::kRuntime);
  const json bad_tools = json::parse(R"(["not a dict"])");
  ChatRenderParams tool_params;
  tool_params.tools = &bad_tools;
  EXPECT_FALSE(r.render(kChat, tool_params).is_ok());
  const json bad_docs = json::parse(R"([1])");
  ChatRenderParams doc_params;
  doc_params.documents = &bad_docs;
  EXPECT_FALSE(r.render(kChat, doc_params).is_ok());
  EXPECT_FALSE(r.render(json::object()).is_ok());
}

TEST(ChatTemplateRenderer, ContinueFinalMessageCutsAfterTheContent) {
  ChatRenderParams params;
  params.continue_final_message = true;
  EXPECT_EQ(render_ok(make(kChatMl), kChat, params),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nThe answer is");
  const json spaced = json::parse(R"([{"role": "user", "content": "Hi"},
                                      {"role": "assistant", "content": "Partial  "}])");
  EXPECT_EQ(render_ok(make(kChatMl), spaced, params),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nPartial  ");
  // A template that trims the content: transformers cuts and rstrips.
  const auto trimmed =
      make("{% for m in messages %}[{{ m.role }}]{{ m.content|trim }}[/]{% endfor %}");
  EXPECT_EQ(render_ok(trimmed, spaced, params), "[user]Hi[/][assistant]Partial");
  // List content: the last text block is the one continued.
  const auto parts = make(
      "{% for m in messages %}{{ m.role }}:{% if m.content is string %}{{ m.content }}{% else %}"
      "{% for p in m.content %}{{ p.text }}{% endfor %}{% endif %};{% endfor %}");
  const json blocks =
      json::parse(R"([{"role": "assistant", "content": [{"type": "text", "text": "A"},
      {"type": "image"}, {"type": "text", "text": "B"}, {"type": "image"}]}])");
  EXPECT_EQ(render_ok(parts, blocks, params), "assistant:AB");
}

TEST(ChatTemplateRenderer, ContinueFinalMessageErrors) {
  ChatRenderParams params;
  params.continue_final_message = true;
  params.add_generation_prompt = true;
  EXPECT_FALSE(make(kChatMl).render(kChat, params).is_ok());
  params.add_generation_prompt = false;
  EXPECT_FALSE(make(kChatMl).render(json::array(), params).is_ok());
  EXPECT_FALSE(make(kChatMl).render(json::parse(R"([{"role": "assistant"}])"), params).is_ok());
  // The template must mention "content" at all.
  EXPECT_FALSE(
      make("{% for m in messages %}{{ m['role'] }}{% endfor %}").render(kChat, params).is_ok());
  // A template that drops the final message.
  EXPECT_FALSE(make("{{ messages[0].content }}").render(kChat, params).is_ok());
}

TEST(ChatTemplateRenderer, RaiseExceptionKeepsTheMessage) {
  const auto r = make(
      "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
      "{% endif %}{{ m.content }}{% endfor %}");
  auto out = r.render(
      json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])"));
  ASSERT_FALSE(out.is_ok());
  EXPECT_EQ(out.error().kind(), ErrorKind::kRaised);
  EXPECT_EQ(out.error().message(),
            "Conversation roles must alternate user/assistant/user/assistant/...");
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), out.error().message());
}

TEST(ChatTemplateRenderer, SyntaxErrorsAreReportedAtCreate) {
  auto r = ChatTemplateRenderer::create("line\n{% for m in messages %}", {});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kSyntax);
  EXPECT_EQ(r.error().line(), 2);
}

TEST(ChatTemplateRenderer, TellsWhetherThePromptStartsWithBos) {
  ChatTemplateOptions options;
  options.bos_token = "<|begin_of_text|>";
  const auto r = make("{{ bos_token }}{{ messages[0].content }}", options);
  const std::string prompt = render_ok(r, json::parse(R"([{"role": "user", "content": "x"}])"));
  EXPECT_TRUE(r.starts_with_bos(prompt));
  EXPECT_FALSE(r.starts_with_bos("x"));
  EXPECT_FALSE(make(kChatMl).starts_with_bos("<|begin_of_text|>x"));  // no BOS token known
}

TEST(ChatTemplateRenderer, ParsesToolCallArguments) {
  json messages = json::parse(R"([
    {"role": "user", "content": "weather?"},
    {"role": "assistant", "content": null, "tool_calls": [
      {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{\"city\": \"Paris\", \"n\": 2}"}},
      {"id": "2", "type": "function", "function": {"name": "g", "arguments": ""}},
      {"id": "3", "type": "function", "function": {"name": "h", "arguments": {"already": true}}}]}])");
  ASSERT_TRUE(ChatTemplateRenderer::parse_tool_call_arguments(&messages).is_ok());
  EXPECT_EQ(messages[1]["tool_calls"][0]["function"]["arguments"],
            json::parse(R"({"city": "Paris", "n": 2})"));
  EXPECT_EQ(messages[1]["tool_calls"][1]["function"]["arguments"], json::object());
  EXPECT_EQ(messages[1]["tool_calls"][2]["function"]["arguments"],
            json::parse(R"({"already": true})"));
  const auto r =
      make("{% for c in messages[1].tool_calls %}{{ c.function.arguments|tojson }};{% endfor %}");
  EXPECT_EQ(render_ok(r, messages), R"({"city": "Paris", "n": 2};{};{"already": true};)");
  json bad = json::parse(
      R"([{"role": "assistant", "tool_calls": [{"function": {"arguments": "{oops"}}]}])");
  const Status s = ChatTemplateRenderer::parse_tool_call_arguments(&bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("messages[0].tool_calls[0]"), std::string::npos);
}

TEST(ChatTemplateRenderer, RendersConcurrently) {
  const auto r = make(kChatMl);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 300; ++i) {
        const std::string content = "m" + std::to_string(t) + "-" + std::to_string(i);
        json messages = json::array({{{"role", "user"}, {"content", content}}});
        auto out = r.render(messages);
        if (!out.is_ok() || out.value() != "<|im_start|>user\n" + content + "<|im_end|>\n") {
          ++failures;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace strata::jinja
