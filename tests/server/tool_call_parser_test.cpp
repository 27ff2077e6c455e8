// tool_call_parser: tools/tool_choice validation, the three call syntaxes
// parsed whole and streamed (assembled deltas equal the whole parse at every
// split point), and the required/named grammar whose sampled outputs are
// calls with arguments that satisfy the parameter schema.
#include "server/tool_call_parser.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "server/protocol.h"
#include "server/structured_output.h"
#include "structured_test_vocab.h"

namespace strata::server {
namespace {

using nlohmann::json;

std::optional<ApiError> tools_of(const std::string& body, std::optional<ToolSpec>* out) {
  ProtocolLimits limits;
  json j;
  if (auto e = parse_json_body(body, limits, &j)) return e;
  return parse_tools(j, body, out);
}

const char* kWeatherTools =
    R"([{"type":"function","function":{"name":"get_weather","description":"d",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":8},)"
    R"("unit":{"enum":["c","f"]}},"required":["city","unit"]}}},)"
    R"({"type":"function","function":{"name":"add","parameters":{"type":"object",)"
    R"("properties":{"b":{"type":"integer","minimum":0,"maximum":99},)"
    R"("a":{"type":"integer","minimum":0,"maximum":99}},"required":["b","a"]}}}])";

std::string with_tools(const std::string& rest) {
  return std::string(R"({"tools":)") + kWeatherTools + rest + "}";
}

TEST(ToolSpecParse, ChoicesAndDefaults) {
  std::optional<ToolSpec> spec;
  ASSERT_FALSE(tools_of("{}", &spec));
  EXPECT_FALSE(spec);
  ASSERT_FALSE(tools_of(R"({"tool_choice":"none"})", &spec));
  EXPECT_FALSE(spec);

  ASSERT_FALSE(tools_of(with_tools(""), &spec));
  ASSERT_TRUE(spec);
  EXPECT_EQ(spec->choice, ToolChoice::kAuto);
  EXPECT_TRUE(spec->parallel);
  ASSERT_EQ(spec->functions.size(), 2u);
  EXPECT_EQ(spec->functions[0].name, "get_weather");
  EXPECT_EQ(spec->functions[0].description, "d");
  // Parameters in document order: b before a.
  EXPECT_LT(spec->functions[1].parameters.find("\"b\""),
            spec->functions[1].parameters.find("\"a\""));
  EXPECT_TRUE(spec->parses_calls());
  EXPECT_FALSE(spec->constrained());

  ASSERT_FALSE(
      tools_of(with_tools(R"(,"tool_choice":"required","parallel_tool_calls":false)"), &spec));
  EXPECT_EQ(spec->choice, ToolChoice::kRequired);
  EXPECT_FALSE(spec->parallel);
  EXPECT_TRUE(spec->constrained());

  ASSERT_FALSE(tools_of(
      with_tools(R"(,"tool_choice":{"type":"function","function":{"name":"add"}})"), &spec));
  EXPECT_EQ(spec->choice, ToolChoice::kNamed);
  EXPECT_EQ(spec->named, "add");

  ASSERT_FALSE(tools_of(with_tools(R"(,"tool_choice":"none")"), &spec));
  ASSERT_TRUE(spec);
  EXPECT_FALSE(spec->parses_calls());

  const json tj = spec->to_template_json();
  ASSERT_EQ(tj.size(), 2u);
  EXPECT_EQ(tj[0]["type"], "function");
  EXPECT_EQ(tj[0]["function"]["name"], "get_weather");
  EXPECT_TRUE(tj[1]["function"]["parameters"].is_object());
}

TEST(ToolSpecParse, Errors) {
  struct Case {
    std::string body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {R"({"tools":{}})", "tools"},
      {R"({"tools":[1]})", "tools[0]"},
      {R"({"tools":[{"type":"retrieval"}]})", "tools[0].type"},
      {R"({"tools":[{"type":"function"}]})", "tools[0].function"},
      {R"({"tools":[{"type":"function","function":{"name":"a b"}}]})", "tools[0].function.name"},
      {R"({"tools":[{"type":"function","function":{}}]})", "tools[0].function.name"},
      {R"({"tools":[{"type":"function","function":{"name":"f"}},)"
       R"({"type":"function","function":{"name":"f"}}]})",
       "tools[1].function.name"},
      {R"({"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]})",
       "tools[0].function.parameters"},
      {R"({"tools":[{"type":"function","function":{"name":"f","extra":1}}]})",
       "tools[0].function.extra"},
      {R"({"tools":[{"type":"function","x":1,"function":{"name":"f"}}]})", "tools[0].x"},
      {R"({"tool_choice":"required"})", "tool_choice"},
      {with_tools(R"(,"tool_choice":"always")"), "tool_choice"},
      {with_tools(R"(,"tool_choice":{"type":"function","function":{"name":"nope"}})"),
       "tool_choice.function.name"},
      {with_tools(R"(,"tool_choice":{"type":"function"})"), "tool_choice"},
      {with_tools(R"(,"parallel_tool_calls":1)"), "parallel_tool_calls"},
  };
  for (const Case& c : cases) {
    std::optional<ToolSpec> spec;
    auto e = tools_of(c.body, &spec);
    ASSERT_TRUE(e) << c.body;
    EXPECT_EQ(e->http_status, 400);
    EXPECT_EQ(e->param, c.param) << c.body;
  }
}

TEST(ToolCallFormat, NamesAndTemplates) {
  EXPECT_EQ(tool_call_format_from_name("hermes").value(), ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_from_name("llama3_json").value(), ToolCallFormat::kLlama3Json);
  EXPECT_EQ(tool_call_format_from_name("mistral").value(), ToolCallFormat::kMistral);
  EXPECT_FALSE(tool_call_format_from_name("pythonic").is_ok());
  EXPECT_EQ(tool_call_format_for_template("{% for tool in tools %}<tool_call>{{ t }}</tool_call>"),
            ToolCallFormat::kHermes);
  EXPECT_EQ(tool_call_format_for_template("{{ '[TOOL_CALLS]' }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(tool_call_format_for_template(
                "<|start_header_id|>ipython ... {\"name\": ..., \"parameters\": ...}"),
            ToolCallFormat::kLlama3Json);
  EXPECT_EQ(tool_call_format_for_template("<|python_tag|>"), ToolCallFormat::kLlama3Json);
  EXPECT_FALSE(tool_call_format_for_template("{{ messages }}"));
  EXPECT_STREQ(tool_call_format_name(ToolCallFormat::kLlama3Json), "llama3_json");
}

TEST(ToolCallParse, Hermes) {
  const std::string text =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
      "\"Paris\", \"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"a\": 1}, "
      "\"name\": \"add\"}\n</tool_call>";
  ParsedToolCalls p = parse_tool_calls(ToolCallFormat::kHermes, text, "call_x");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].id, "call_x0");
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, R"({"city": "Paris", "unit": "c"})");
  EXPECT_EQ(p.calls[1].id, "call_x1");
  EXPECT_EQ(p.calls[1].name, "add");
  EXPECT_EQ(p.calls[1].arguments, R"({"a": 1})");
  EXPECT_EQ(p.content, "Let me check.\n\n");

  ParsedToolCalls plain = parse_tool_calls(ToolCallFormat::kHermes, "a < b <tool", "c");
  EXPECT_TRUE(plain.calls.empty());
  EXPECT_EQ(plain.content, "a < b <tool");

  // A string-valued arguments field is decoded; no arguments means {}.
  ParsedToolCalls s =
      parse_tool_calls(ToolCallFormat::kHermes,
                       "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>"
                       "<tool_call>{\"name\": \"g\"}</tool_call>",
                       "c");
  ASSERT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.calls[0].arguments, R"({"x": 1})");
  EXPECT_EQ(s.calls[1].arguments, "{}");

  // A block without a name is content; max_calls drops later calls.
  ParsedToolCalls n =
      parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>{\"x\": 1}</tool_call>", "c");
  EXPECT_TRUE(n.calls.empty());
  EXPECT_EQ(n.content, "{\"x\": 1}");
  // An empty name names no function (found by fuzz_tool_call).
  ParsedToolCalls e =
      parse_tool_calls(ToolCallFormat::kHermes, "<tool_call>{\"name\": \"\"}</tool_call>", "c");
  EXPECT_TRUE(e.calls.empty());
  EXPECT_EQ(e.content, "{\"name\": \"\"}");
  ParsedToolCalls one = parse_tool_calls(ToolCallFormat::kHermes, text, "c", 1);
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.calls[0].name, "get_weather");
}

TEST(ToolCallParse, Llama3Json) {
  ParsedToolCalls p = parse_tool_calls(
      ToolCallFormat::kLlama3Json,
      "<|python_tag|>{\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": [2, {\"c\": \"}\"}]}}; "
      "{\"name\": \"get_weather\", \"parameters\": {}}",
      "id");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "add");
  EXPECT_EQ(p.calls[0].arguments, R"({"a": 1, "b": [2, {"c": "}"}]})");
  EXPECT_EQ(p.calls[1].name, "get_weather");
  EXPECT_EQ(p.calls[1].arguments, "{}");
  EXPECT_EQ(p.content, "");

  ParsedToolCalls text = parse_tool_calls(ToolCallFormat::kLlama3Json, "  Hello {x}", "id");
  EXPECT_TRUE(text.calls.empty());
  EXPECT_EQ(text.content, "  Hello {x}");
  ParsedToolCalls obj = parse_tool_calls(ToolCallFormat::kLlama3Json, "{\"answer\": 4}", "id");
  EXPECT_TRUE(obj.calls.empty());
  EXPECT_EQ(obj.content, "{\"answer\": 4}");
}

TEST(ToolCallParse, Mistral) {
  ParsedToolCalls p = parse_tool_calls(
      ToolCallFormat::kMistral,
      "Sure[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", "
      "\"arguments\": {\"s\": \"]\"}}]",
      "id");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, R"({"a": 1})");
  EXPECT_EQ(p.calls[1].name, "g");
  EXPECT_EQ(p.calls[1].arguments, R"({"s": "]"})");
  EXPECT_EQ(p.content, "Sure");
}

void expect_same(const ParsedToolCalls& a, const ParsedToolCalls& b, const std::string& what) {
  EXPECT_EQ(a.content, b.content) << what;
  ASSERT_EQ(a.calls.size(), b.calls.size()) << what;
  for (size_t i = 0; i < a.calls.size(); ++i) {
    EXPECT_EQ(a.calls[i].id, b.calls[i].id) << what;
    EXPECT_EQ(a.calls[i].name, b.calls[i].name) << what;
    EXPECT_EQ(a.calls[i].arguments, b.calls[i].arguments) << what;
  }
}

// Streaming assembled == non-streaming: one split at every point, two splits
// at every pair of points for the short texts, and byte by byte.
TEST(ToolCallStream, AssembledEqualsWholeAtEverySplit) {
  struct Case {
    ToolCallFormat format;
    std::string text;
  };
  const std::vector<Case> cases = {
      {ToolCallFormat::kHermes,
       "Hi <b>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\\\"x\", "
       "\"unit\": \"c\"}}\n</tool_call>\n<tool_call>\n{\"arguments\": {\"a\": [1, 2]}, \"name\": "
       "\"add\"}\n</tool_call> bye <tool"},
      {ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": \"{}\"}</tool_call>"},
      {ToolCallFormat::kHermes, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1"},
      {ToolCallFormat::kHermes, "<tool_call>{\"x\": 1}</tool_call> plain"},
      {ToolCallFormat::kLlama3Json,
       " <|python_tag|>{\"name\": \"add\", \"parameters\": {\"a\": 1}}; {\"name\": \"g\", "
       "\"parameters\": {\"q\": \"a;b\"}}"},
      {ToolCallFormat::kLlama3Json, "  <|pyth not a tag"},
      {ToolCallFormat::kLlama3Json, "{\"answer\": true} tail"},
      {ToolCallFormat::kMistral,
       "ok [TOOL_CALLS] [{\"name\": \"a\", \"arguments\": {\"x\": null}}, {\"name\": \"b\", "
       "\"arguments\": {}}] done [TOOL"},
  };
  for (const Case& c : cases) {
    const ParsedToolCalls whole = parse_tool_calls(c.format, c.text, "id");
    for (size_t i = 0; i <= c.text.size(); ++i) {
      ToolCallStreamParser p(c.format, "id");
      ParsedToolCalls got;
      assemble_tool_deltas(p.push(c.text.substr(0, i)), &got);
      assemble_tool_deltas(p.push(c.text.substr(i)), &got);
      assemble_tool_deltas(p.finish(), &got);
      expect_same(got, whole, c.text + " split at " + std::to_string(i));
    }
    if (c.text.size() <= 80) {
      for (size_t i = 0; i <= c.text.size(); ++i) {
        for (size_t j = i; j <= c.text.size(); ++j) {
          ToolCallStreamParser p(c.format, "id");
          ParsedToolCalls got;
          assemble_tool_deltas(p.push(c.text.substr(0, i)), &got);
          assemble_tool_deltas(p.push(c.text.substr(i, j - i)), &got);
          assemble_tool_deltas(p.push(c.text.substr(j)), &got);
          assemble_tool_deltas(p.finish(), &got);
          expect_same(got, whole,
                      c.text + " splits " + std::to_string(i) + "," + std::to_string(j));
        }
      }
    }
    ToolCallStreamParser p(c.format, "id");
    ParsedToolCalls got;
    for (char ch : c.text) assemble_tool_deltas(p.push(std::string(1, ch)), &got);
    assemble_tool_deltas(p.finish(), &got);
    expect_same(got, whole, c.text + " byte by byte");
  }
}

TEST(ToolCallStream, DeltasNameFirstThenArgumentFragmentsAndHoldBack) {
  ToolCallStreamParser p(ToolCallFormat::kHermes, "call_");
  ToolStreamDelta d = p.push("Hello <tool");
  EXPECT_EQ(d.content, "Hello ");  // "<tool" may start a call: held back
  EXPECT_TRUE(d.tool_calls.empty());
  d = p.push("_call>\n{\"name\": \"add\", \"argu");
  EXPECT_EQ(d.content, "");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].index, 0);
  EXPECT_EQ(d.tool_calls[0].id, "call_0");
  EXPECT_EQ(d.tool_calls[0].name, "add");
  EXPECT_EQ(d.tool_calls[0].arguments, "");
  d = p.push("ments\": {\"a\": ");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_TRUE(d.tool_calls[0].id.empty());
  EXPECT_TRUE(d.tool_calls[0].name.empty());
  EXPECT_EQ(d.tool_calls[0].arguments, "{\"a\": ");
  d = p.push("5}}\n</tool_call>");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].arguments, "5}");
  EXPECT_TRUE(p.finish().empty());
  EXPECT_EQ(p.num_calls(), 1);
}

class ToolGrammar : public ::testing::Test {
 protected:
  ToolSpec spec(const std::string& rest) {
    std::optional<ToolSpec> s;
    auto e = tools_of(with_tools(rest), &s);
    EXPECT_FALSE(e) << (e ? e->message : "");
    return s.value_or(ToolSpec{});
  }
  StructuredOutputCompiler compiler{testing::make_test_trie(), GrammarCache::Options{}};
};

// Sampled outputs of the required/named grammar are calls of a listed (or
// the named) function whose arguments satisfy its parameter schema.
TEST_F(ToolGrammar, SampledCallsHaveValidArguments) {
  std::mt19937 rng(11);
  for (ToolCallFormat format :
       {ToolCallFormat::kHermes, ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral}) {
    for (const std::string& rest :
         {std::string(R"(,"tool_choice":"required")"),
          std::string(R"(,"tool_choice":"required","parallel_tool_calls":false)"),
          std::string(R"(,"tool_choice":{"type":"function","function":{"name":"add"}})")}) {
      const ToolSpec s = spec(rest);
      std::shared_ptr<const TokenMaskCache> cache;
      auto e = compiler.compile_keyed(
          tool_call_grammar_key(format, s), [&] { return tool_call_grammar(format, s); }, "tools",
          &cache);
      ASSERT_FALSE(e) << e->message;
      // Parameter grammars alone, to check each call's arguments.
      std::vector<std::shared_ptr<const TokenMaskCache>> params;
      for (const ToolFunction& f : s.functions) {
        std::shared_ptr<const TokenMaskCache> pc;
        ASSERT_FALSE(compiler.compile_spec({GrammarKind::kJsonSchema, f.parameters}, "p", &pc));
        params.push_back(pc);
      }
      int finished_count = 0;
      for (int i = 0; i < 12; ++i) {
        bool finished = false;
        const std::string out = testing::sample_output(cache, rng, 600, &finished);
        if (!finished) continue;
        ++finished_count;
        const ParsedToolCalls p = parse_tool_calls(format, out, "c");
        ASSERT_GE(p.calls.size(), 1u) << out;
        if (!s.parallel) {
          EXPECT_EQ(p.calls.size(), 1u) << out;
        }
        for (const ToolCall& call : p.calls) {
          if (s.choice == ToolChoice::kNamed) {
            EXPECT_EQ(call.name, "add") << out;
          }
          const size_t fi = call.name == "get_weather" ? 0 : 1;
          ASSERT_TRUE(call.name == "get_weather" || call.name == "add") << out;
          EXPECT_TRUE(
              output_satisfies_grammar(GrammarKind::kJsonSchema, *params[fi], call.arguments)
                  .is_ok())
              << out;
          EXPECT_TRUE(json::parse(call.arguments, nullptr, false).is_object()) << out;
        }
        // And streamed byte by byte, the same calls.
        ToolCallStreamParser sp(format, "c");
        ParsedToolCalls got;
        for (char ch : out) assemble_tool_deltas(sp.push(std::string(1, ch)), &got);
        assemble_tool_deltas(sp.finish(), &got);
        expect_same(got, p, out);
      }
      EXPECT_GT(finished_count, 0) << tool_call_format_name(format) << rest;
    }
  }
}

TEST_F(ToolGrammar, UnsupportedParameterKeywordNamesTheTool) {
  std::optional<ToolSpec> s;
  const std::string body =
      R"({"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object",)"
      R"("properties":{"x":{"not":{}}}}}}],"tool_choice":"required"})";
  ASSERT_FALSE(tools_of(body, &s));
  auto g = tool_call_grammar(ToolCallFormat::kHermes, *s);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("tools[0].function.parameters"), std::string::npos)
      << g.status().message();
  EXPECT_NE(g.status().message().find("'not'"), std::string::npos) << g.status().message();
  EXPECT_NE(g.status().message().find("$.properties.x"), std::string::npos) << g.status().message();
}

}  // namespace
}  // namespace strata::server
