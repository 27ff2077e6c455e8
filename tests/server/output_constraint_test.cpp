// output_constraint: a request's constraint from its body (grammar for the
// engine, tool parsing), and ChoiceOutput: streamed deltas assemble to the
// non-streamed message at every split, whitespace next to calls dropped,
// finish_reason tool_calls, and the post-generation check counting only
// outputs the grammar ended.
#include "server/output_constraint.h"

#include <gtest/gtest.h>

#include <string>

#include "server/protocol.h"
#include "structured_test_vocab.h"

namespace strata::server {
namespace {

using nlohmann::json;

class OutputConstraintTest : public ::testing::Test {
 protected:
  std::optional<ApiError> prepare(const std::string& body, bool is_chat, OutputConstraint* out) {
    json j;
    if (auto e = parse_json_body(body, ProtocolLimits{}, &j)) return e;
    return prepare_output_constraint(j, body, is_chat, compiler, ToolCallFormat::kHermes, out);
  }
  std::shared_ptr<StructuredOutputCompiler> compiler = std::make_shared<StructuredOutputCompiler>(
      testing::make_test_trie(), GrammarCache::Options{});
};

const char* kTools =
    R"("tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",)"
    R"("properties":{"a":{"type":"integer","minimum":0,"maximum":9}},"required":["a"]}}}])";

TEST_F(OutputConstraintTest, GrammarFromTheRightField) {
  OutputConstraint c;
  ASSERT_FALSE(prepare(R"({"prompt":"x"})", false, &c));
  EXPECT_FALSE(c.grammar);
  EXPECT_FALSE(c.tools);

  ASSERT_FALSE(prepare(R"({"prompt":"x","guided_regex":"[ab]+"})", false, &c));
  ASSERT_TRUE(c.grammar);
  EXPECT_EQ(c.grammar_param, "guided_regex");

  // auto: parsed, not constrained; required: the tool grammar.
  ASSERT_FALSE(prepare(std::string("{") + kTools + "}", true, &c));
  EXPECT_FALSE(c.grammar);
  EXPECT_TRUE(c.parses_tool_calls());
  ASSERT_FALSE(prepare(std::string("{") + kTools + R"(,"tool_choice":"required"})", true, &c));
  EXPECT_TRUE(c.grammar);
  EXPECT_EQ(c.grammar_param, "tools");

  // Completions have no tools (the protocol refuses the field first); here
  // they are simply not read.
  ASSERT_FALSE(prepare(std::string("{") + kTools + R"(,"tool_choice":"required"})", false, &c));
  EXPECT_FALSE(c.tools);
}

TEST_F(OutputConstraintTest, TwoConstraintsOnOneOutputAre400) {
  OutputConstraint c;
  auto e = prepare(std::string("{") + kTools +
                       R"(,"tool_choice":"required","response_format":{"type":"json_object"}})",
                   true, &c);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->param, "tool_choice");
  // auto tools and a response format may go together: the format wins and
  // the output is not parsed for calls.
  ASSERT_FALSE(prepare(std::string("{") + kTools + R"(,"response_format":{"type":"json_object"}})",
                       true, &c));
  ChoiceOutput out(std::make_shared<const OutputConstraint>(c), "call_");
  EXPECT_FALSE(out.parses_tool_calls());
  const std::string call = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
  EXPECT_EQ(out.message(call)["content"], call);
}

TEST_F(OutputConstraintTest, StreamedDeltasAssembleToTheMessageAtEverySplit) {
  OutputConstraint c;
  ASSERT_FALSE(prepare(std::string("{") + kTools + "}", true, &c));
  auto shared = std::make_shared<const OutputConstraint>(c);
  const std::string text =
      "Hi <x>\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 2}}\n</tool_call>\n";
  ChoiceOutput whole(shared, "call_");
  const json msg = whole.message(text);
  ASSERT_EQ(msg["tool_calls"].size(), 2u);
  EXPECT_EQ(msg["content"], "Hi <x>");
  EXPECT_EQ(msg["tool_calls"][1]["function"]["arguments"], R"({"a": 2})");
  EXPECT_STREQ(whole.finish_reason(FinishReason::kStop), "tool_calls");
  EXPECT_STREQ(whole.finish_reason(FinishReason::kLength), "length");

  for (size_t i = 0; i <= text.size(); ++i) {
    ChoiceOutput s(shared, "call_");
    json content = "";
    json calls = json::array();
    for (const json& d :
         {s.stream_delta(text.substr(0, i), false), s.stream_delta(text.substr(i), true)}) {
      if (d.is_null()) continue;
      if (d.contains("content"))
        content = content.get<std::string>() + d["content"].get<std::string>();
      for (const json& t : d.value("tool_calls", json::array())) {
        const size_t k = t["index"].get<size_t>();
        if (k >= calls.size()) {
          ASSERT_TRUE(t.contains("id")) << i;
          EXPECT_EQ(t["type"], "function");
          calls.push_back({{"id", t["id"]},
                           {"type", "function"},
                           {"function", {{"name", t["function"]["name"]}, {"arguments", ""}}}});
        }
        calls[k]["function"]["arguments"] = calls[k]["function"]["arguments"].get<std::string>() +
                                            t["function"]["arguments"].get<std::string>();
      }
    }
    EXPECT_EQ(content, msg["content"]) << i;
    EXPECT_EQ(calls, msg["tool_calls"]) << i;
    EXPECT_STREQ(s.finish_reason(FinishReason::kStop), "tool_calls");
  }

  // Content only: whitespace is kept, content is a string, no tool_calls.
  ChoiceOutput plain(shared, "call_");
  const json p = plain.message("no call here \n");
  EXPECT_EQ(p["content"], "no call here \n");
  EXPECT_FALSE(p.contains("tool_calls"));
  EXPECT_STREQ(plain.finish_reason(FinishReason::kStop), "stop");
}

TEST_F(OutputConstraintTest, CheckCountsOnlyOutputsTheGrammarEnded) {
  OutputConstraint c;
  ASSERT_FALSE(prepare(R"({"prompt":"x","guided_choice":["yes","no"]})", false, &c));
  auto shared = std::make_shared<const OutputConstraint>(c);
  ChoiceOutput out(shared, "call_");
  EXPECT_TRUE(out.check("yes", FinishReason::kStop, false));
  EXPECT_TRUE(out.check("ye", FinishReason::kLength, false));  // cut by max_tokens
  EXPECT_TRUE(out.check("ye", FinishReason::kStop, true));     // cut by a stop string
  EXPECT_EQ(compiler->num_violations(), 0u);
  EXPECT_FALSE(out.check("ye", FinishReason::kStop, false));
  EXPECT_FALSE(out.check("yes!", FinishReason::kStop, false));
  EXPECT_EQ(compiler->num_violations(), 2u);
  const std::string text = structured_output_metrics_text(compiler.get(), "m\"x");
  EXPECT_NE(text.find("# TYPE strata_structured_output_violations_total counter"),
            std::string::npos);
  EXPECT_NE(text.find("strata_structured_output_violations_total{model_name=\"m\\\"x\"} 2\n"),
            std::string::npos)
      << text;
}

TEST(ToolCallFormatResolve, FlagThenTemplateThenHermes) {
  EXPECT_EQ(resolve_tool_call_format("mistral", "<tool_call>").value(), ToolCallFormat::kMistral);
  EXPECT_EQ(resolve_tool_call_format("", "[TOOL_CALLS]").value(), ToolCallFormat::kMistral);
  EXPECT_EQ(resolve_tool_call_format("", "plain").value(), ToolCallFormat::kHermes);
  EXPECT_FALSE(resolve_tool_call_format("xml", "").is_ok());
}

}  // namespace
}  // namespace strata::server
