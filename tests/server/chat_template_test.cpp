// ChatTemplate and PromptBuilder's chat path: the model's template rendered
// by the Jinja engine with Hugging Face's inputs (messages as sent, key
// order kept, text parts joined, tool-call arguments parsed, special tokens,
// kwargs, documents, continue_final_message), no double BOS, and a template
// that raises answered with a 400 carrying its message.
#include "server/chat_template.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "engine/engine_test_util.h"
#include "server/prompt_builder.h"

namespace strata::server {
namespace {

using nlohmann::ordered_json;
using strata::testing::peaky_model;

const Tokenizer& tok() {
  return *peaky_model().tokenizer;
}

ChatTemplate make(std::string_view source) {
  Result<ChatTemplate> t = ChatTemplate::create(source, tok());
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  return std::move(*t);
}

ProtocolLimits limits() {
  ProtocolLimits l;
  l.vocab_size = tok().vocab_size();
  l.max_model_len = 4096;
  return l;
}

// The text `source` renders for the chat request `body`, or the error.
std::string render(std::string_view source, const std::string& body, ApiError* error = nullptr) {
  const ChatTemplate t = make(source);
  ChatRequest cr;
  if (auto e = parse_chat_request(ordered_json::parse(body), limits(), &cr)) {
    if (error != nullptr) *error = *e;
    return "<parse error: " + e->message + ">";
  }
  PromptBuilder b(tok(), t);
  std::string text;
  if (auto e = b.chat_text(cr.chat, &text)) {
    if (error != nullptr) *error = *e;
    return "<error: " + e->message + ">";
  }
  return text;
}

TEST(ChatTemplate, MessagesReachTheTemplateAsSentInKeyOrder) {
  STRATA_REQUIRE_MODEL();
  const std::string body = R"({"messages":[
    {"role":"user","name":"ann","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
    {"role":"assistant","content":null,"reasoning_content":"why",
     "tool_calls":[{"id":"c1","type":"function",
                    "function":{"name":"f","arguments":"{\"z\":1,\"a\":[2]}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"42"}]})";
  EXPECT_EQ(render("{% for m in messages %}{{ m | tojson }}\n{% endfor %}", body),
            "{\"role\": \"user\", \"name\": \"ann\", \"content\": \"a\\nb\"}\n"
            "{\"role\": \"assistant\", \"content\": null, \"reasoning_content\": \"why\", "
            "\"tool_calls\": [{\"id\": \"c1\", \"type\": \"function\", \"function\": {\"name\": "
            "\"f\", \"arguments\": {\"z\": 1, \"a\": [2]}}}]}\n"
            "{\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"42\"}\n");
}

TEST(ChatTemplate, SpecialTokensKwargsDocumentsAndGenerationPrompt) {
  STRATA_REQUIRE_MODEL();
  const std::string src =
      "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ enable_thinking }}|"
      "{{ documents | tojson }}|{{ tools }}";
  const std::string bos = tok().token_text(tok().bos_id());
  const std::string eos = tok().token_text(tok().eos_id());
  EXPECT_EQ(render(src, R"({"messages":[{"role":"user","content":"x"}],
                    "chat_template_kwargs":{"enable_thinking":false},
                    "documents":[{"title":"t","text":"d"}]})"),
            bos + "|" + eos + "|True|False|[{\"title\": \"t\", \"text\": \"d\"}]|None");
  EXPECT_EQ(render(src, R"({"messages":[{"role":"user","content":"x"}],
                    "add_generation_prompt":false})"),
            bos + "|" + eos + "|False||null|None");
}

TEST(ChatTemplate, RaiseExceptionIsA400WithItsMessage) {
  STRATA_REQUIRE_MODEL();
  ApiError e;
  render(
      "{% if messages[0].role != 'system' %}{{ raise_exception('Roles must alternate!') }}"
      "{% endif %}",
      R"({"messages":[{"role":"user","content":"x"}]})", &e);
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "messages");
  EXPECT_EQ(e.message, "Roles must alternate!");
  // Other failures name the template's position.
  render("{{ messages[0].content.nope() }}", R"({"messages":[{"role":"user","content":"x"}]})", &e);
  EXPECT_EQ(e.http_status, 400);
  EXPECT_NE(e.message.find("The chat template failed"), std::string::npos) << e.message;
}

TEST(ChatTemplate, ContinueFinalMessage) {
  STRATA_REQUIRE_MODEL();
  const std::string src =
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}";
  EXPECT_EQ(render(src, R"({"messages":[{"role":"user","content":"q"},
                    {"role":"assistant","content":"The answer is"}],
                    "add_generation_prompt":false,"continue_final_message":true})"),
            "<user>q</user><assistant>The answer is");
  ApiError e;
  render(src, R"({"messages":[{"role":"user","content":"q"}],"continue_final_message":true})", &e);
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "continue_final_message");
}

TEST(ChatTemplate, SyntaxErrorNamesThePosition) {
  STRATA_REQUIRE_MODEL();
  Result<ChatTemplate> t = ChatTemplate::create("ok\n{% if %}", tok());
  ASSERT_FALSE(t.is_ok());
  EXPECT_NE(t.status().message().find("line 2"), std::string::npos) << t.status().message();
  EXPECT_FALSE(ChatTemplate::from_file("/nonexistent/t.jinja", tok()).is_ok());
}

TEST(ChatTemplate, ChatMlFallback) {
  STRATA_REQUIRE_MODEL();
  const ChatTemplate t = make("");
  EXPECT_TRUE(t.is_fallback());
  EXPECT_FALSE(make("x").is_fallback());
  EXPECT_EQ(render("", R"({"messages":[{"role":"system","content":"s"},
                 {"role":"user","content":"hi"},{"role":"assistant","content":null}]})"),
            "<|im_start|>system\ns<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n"
            "<|im_start|>assistant\n<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplate, NoDoubleBos) {
  STRATA_REQUIRE_MODEL();
  ASSERT_GE(tok().bos_id(), 0);
  const std::string bos = tok().token_text(tok().bos_id());
  const ChatTemplate writes_bos = make("{{ bos_token }}{{ messages[0].content }}");
  const ChatTemplate no_bos = make("{{ messages[0].content }}");
  ChatRequest cr;
  ASSERT_FALSE(parse_chat_request(
      ordered_json::parse(R"({"messages":[{"role":"user","content":"hello"}]})"), limits(), &cr));
  const std::vector<int32_t> plain = tok().encode("hello", tok().add_bos(), true);
  std::vector<int32_t> ids;
  ASSERT_FALSE(PromptBuilder(tok(), writes_bos).chat_prompt(cr.chat, true, &ids));
  EXPECT_EQ(ids, tok().encode(bos + "hello", false, true));
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok().bos_id()), 1);
  // A template without BOS gets the tokenizer's, as a completion would.
  ASSERT_FALSE(PromptBuilder(tok(), no_bos).chat_prompt(cr.chat, true, &ids));
  EXPECT_EQ(ids, plain);
  // add_special_tokens false (vLLM's chat default, accepted explicitly): none added.
  ASSERT_FALSE(PromptBuilder(tok(), no_bos).chat_prompt(cr.chat, false, &ids));
  EXPECT_EQ(ids, tok().encode("hello", false, true));
}

}  // namespace
}  // namespace strata::server
