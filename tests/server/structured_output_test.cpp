// structured_output: the constraint fields of a request body to one grammar
// spec, 400s for conflicting or unsupported constraints, compilation through
// the server's GrammarCache, and the post-generation check.
#include "server/structured_output.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "server/protocol.h"
#include "structured_test_vocab.h"

namespace strata::server {
namespace {

using nlohmann::json;

std::optional<ApiError> parse(const std::string& body, std::optional<StructuredOutput>* out) {
  ProtocolLimits limits;
  json j;
  if (auto e = parse_json_body(body, limits, &j)) return e;
  return parse_structured_output(j, body, out);
}

StructuredOutput parse_ok(const std::string& body) {
  std::optional<StructuredOutput> so;
  auto e = parse(body, &so);
  EXPECT_FALSE(e.has_value()) << (e ? e->message : "");
  EXPECT_TRUE(so.has_value()) << body;
  return so.value_or(StructuredOutput{});
}

ApiError parse_err(const std::string& body) {
  std::optional<StructuredOutput> so;
  auto e = parse(body, &so);
  EXPECT_TRUE(e.has_value()) << body;
  return e.value_or(ApiError{});
}

TEST(StructuredOutput, NoneWhenAbsentOrText) {
  std::optional<StructuredOutput> so;
  EXPECT_FALSE(parse(R"({"prompt":"x"})", &so));
  EXPECT_FALSE(so);
  EXPECT_FALSE(parse(R"({"response_format":{"type":"text"}})", &so));
  EXPECT_FALSE(so);
  EXPECT_FALSE(parse(R"({"response_format":null,"guided_json":null})", &so));
  EXPECT_FALSE(so);
}

TEST(StructuredOutput, ResponseFormat) {
  StructuredOutput a = parse_ok(R"({"response_format":{"type":"json_object"}})");
  EXPECT_EQ(a.spec.kind, GrammarKind::kJsonObject);
  EXPECT_EQ(a.param, "response_format");

  // The schema keeps the document's property order (b before a).
  StructuredOutput b = parse_ok(
      R"({"response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,)"
      R"("schema":{"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"string"}}}}}})");
  EXPECT_EQ(b.spec.kind, GrammarKind::kJsonSchema);
  EXPECT_LT(b.spec.text.find("\"b\""), b.spec.text.find("\"a\"")) << b.spec.text;

  StructuredOutput c =
      parse_ok(R"({"response_format":{"type":"json_schema","json_schema":{"name":"x"}}})");
  EXPECT_EQ(c.spec.kind, GrammarKind::kJsonObject);

  EXPECT_EQ(parse_err(R"({"response_format":{"type":"yaml"}})").param, "response_format.type");
  EXPECT_EQ(parse_err(R"({"response_format":"json"})").param, "response_format");
  EXPECT_EQ(parse_err(R"({"response_format":{"type":"json_schema"}})").param,
            "response_format.json_schema");
  EXPECT_EQ(parse_err(R"({"response_format":{"type":"json_schema","json_schema":)"
                      R"({"schema":{},"strict":"yes"}}})")
                .param,
            "response_format.json_schema.strict");
  EXPECT_EQ(parse_err(R"({"response_format":{"type":"json_schema","json_schema":)"
                      R"({"schema":{},"whitespace":1}}})")
                .param,
            "response_format.json_schema.whitespace");
  EXPECT_EQ(parse_err(R"({"response_format":{"type":"json_object","schema":{}}})").param,
            "response_format.schema");
}

TEST(StructuredOutput, VllmStructuredOutputs) {
  StructuredOutput j = parse_ok(R"({"structured_outputs":{"json":{"type":"integer"}}})");
  EXPECT_EQ(j.spec.kind, GrammarKind::kJsonSchema);
  EXPECT_EQ(j.param, "structured_outputs.json");
  StructuredOutput js = parse_ok(R"({"structured_outputs":{"json":"{\"type\":\"integer\"}"}})");
  EXPECT_EQ(js.spec.text, R"({"type":"integer"})");
  EXPECT_EQ(parse_ok(R"({"structured_outputs":{"regex":"[0-9]+"}})").spec.kind,
            GrammarKind::kRegex);
  StructuredOutput ch = parse_ok(R"({"structured_outputs":{"choice":["yes","no"]}})");
  EXPECT_EQ(ch.spec.kind, GrammarKind::kChoice);
  EXPECT_EQ(json::parse(ch.spec.text), json::parse(R"(["yes","no"])"));
  EXPECT_EQ(parse_ok(R"({"structured_outputs":{"grammar":"root ::= \"a\""}})").spec.kind,
            GrammarKind::kGbnf);
  EXPECT_EQ(parse_ok(R"({"structured_outputs":{"json_object":true}})").spec.kind,
            GrammarKind::kJsonObject);
  std::optional<StructuredOutput> none;
  EXPECT_FALSE(parse(R"({"structured_outputs":{"json_object":false}})", &none));
  EXPECT_FALSE(none);

  EXPECT_EQ(parse_err(R"({"structured_outputs":{"regex":"a","choice":["a"]}})").param,
            "structured_outputs");
  EXPECT_EQ(parse_err(R"({"structured_outputs":{"whitespace_pattern":" "}})").param,
            "structured_outputs.whitespace_pattern");
  EXPECT_EQ(parse_err(R"({"structured_outputs":{"choice":[]}})").param,
            "structured_outputs.choice");
  EXPECT_EQ(parse_err(R"({"structured_outputs":{"choice":[1]}})").param,
            "structured_outputs.choice");
  EXPECT_EQ(parse_err(R"({"structured_outputs":{"regex":5}})").param, "structured_outputs.regex");
  EXPECT_EQ(parse_err(R"({"structured_outputs":{"json":5}})").param, "structured_outputs.json");
}

TEST(StructuredOutput, GuidedFields) {
  EXPECT_EQ(parse_ok(R"({"guided_json":{"type":"string"}})").spec.kind, GrammarKind::kJsonSchema);
  EXPECT_EQ(parse_ok(R"({"guided_regex":"a|b"})").spec.kind, GrammarKind::kRegex);
  EXPECT_EQ(parse_ok(R"({"guided_choice":["x"]})").spec.kind, GrammarKind::kChoice);
  EXPECT_EQ(
      parse_ok(R"({"guided_grammar":"root ::= \"a\"","guided_decoding_backend":"x"})").spec.kind,
      GrammarKind::kGbnf);
  EXPECT_EQ(parse_err(R"({"guided_regex":""})").param, "guided_regex");
  EXPECT_EQ(parse_err(R"({"guided_json":{},"guided_whitespace_pattern":" "})").param,
            "guided_whitespace_pattern");
  EXPECT_EQ(parse_err(R"({"guided_decoding_backend":3})").param, "guided_decoding_backend");
}

TEST(StructuredOutput, MoreThanOneConstraintIs400) {
  ApiError e = parse_err(R"({"response_format":{"type":"json_object"},"guided_regex":"a"})");
  EXPECT_EQ(e.http_status, 400);
  EXPECT_EQ(e.param, "guided_regex");
  EXPECT_NE(e.message.find("response_format"), std::string::npos) << e.message;
  EXPECT_EQ(parse_err(R"({"guided_choice":["a"],"guided_json":{}})").http_status, 400);
  EXPECT_EQ(parse_err(R"({"structured_outputs":{"regex":"a"},"guided_regex":"a"})").param,
            "guided_regex");
  // response_format text is no constraint, so it combines with one.
  EXPECT_EQ(parse_ok(R"({"response_format":{"type":"text"},"guided_regex":"a"})").spec.kind,
            GrammarKind::kRegex);
}

TEST(StructuredOutput, FieldNames) {
  for (const char* f :
       {"response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice",
        "guided_grammar", "guided_decoding_backend", "guided_whitespace_pattern"}) {
    EXPECT_TRUE(is_structured_output_field(f)) << f;
  }
  EXPECT_FALSE(is_structured_output_field("tools"));
}

class StructuredCompile : public ::testing::Test {
 protected:
  StructuredOutputCompiler compiler{testing::make_test_trie(), GrammarCache::Options{}};
};

TEST_F(StructuredCompile, UnsupportedKeywordNamesKeywordAndPath) {
  StructuredOutput so = parse_ok(
      R"({"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":)"
      R"({"type":"object","properties":{"a":{"type":"object","patternProperties":{"x":{}}}}}}}})");
  std::shared_ptr<const TokenMaskCache> cache;
  auto e = compiler.compile(so, &cache);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 400);
  EXPECT_EQ(e->param, "response_format");
  EXPECT_NE(e->message.find("'patternProperties'"), std::string::npos) << e->message;
  EXPECT_NE(e->message.find("$.properties.a"), std::string::npos) << e->message;
  EXPECT_FALSE(cache);
}

TEST_F(StructuredCompile, BadRegexAndGrammarAre400) {
  std::shared_ptr<const TokenMaskCache> cache;
  auto r = compiler.compile(parse_ok(R"({"guided_regex":"(a"})"), &cache);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->param, "guided_regex");
  auto g = compiler.compile(parse_ok(R"({"guided_grammar":"root ::= undefined_rule"})"), &cache);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->param, "guided_grammar");
  auto j = compiler.compile(parse_ok(R"({"guided_json":"{not json"})"), &cache);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->param, "guided_json");
}

TEST_F(StructuredCompile, CachedAndSampledOutputsPassTheCheck) {
  const char* bodies[] = {
      R"({"response_format":{"type":"json_schema","json_schema":{"name":"p","schema":)"
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":5},)"
      R"("age":{"type":"integer","minimum":0,"maximum":150},"tags":{"type":"array",)"
      R"("items":{"enum":["a","b"]},"maxItems":3}},"required":["name","age"]}}}})",
      R"({"response_format":{"type":"json_object"}})",
      R"({"guided_regex":"[a-c]{2,4}-[0-9]"})",
      R"({"guided_choice":["red","green","blue"]})",
      R"({"guided_grammar":"root ::= \"(\" [0-9]+ \")\""})",
  };
  std::mt19937 rng(7);
  for (const char* body : bodies) {
    StructuredOutput so = parse_ok(body);
    std::shared_ptr<const TokenMaskCache> a, b;
    ASSERT_FALSE(compiler.compile(so, &a)) << body;
    ASSERT_FALSE(compiler.compile(so, &b));
    EXPECT_EQ(a.get(), b.get()) << "second compile is a cache hit";
    int finished_count = 0;
    for (int i = 0; i < 20; ++i) {
      bool finished = false;
      const std::string out = testing::sample_output(a, rng, 400, &finished);
      if (!finished) continue;
      ++finished_count;
      EXPECT_TRUE(compiler.check_output(so, *a, out).is_ok()) << body << "\n" << out;
    }
    EXPECT_GT(finished_count, 0) << body;
  }
  EXPECT_EQ(compiler.num_violations(), 0u);
}

TEST_F(StructuredCompile, ViolationIsCountedAndReported) {
  StructuredOutput so = parse_ok(R"({"guided_json":{"type":"object","properties":)"
                                 R"({"a":{"type":"integer"}},"required":["a"]}})");
  std::shared_ptr<const TokenMaskCache> cache;
  ASSERT_FALSE(compiler.compile(so, &cache));
  std::string seen_param, seen_reason;
  int calls = 0;
  compiler.set_violation_hook([&](const std::string& param, const std::string& reason) {
    seen_param = param;
    seen_reason = reason;
    ++calls;
  });
  EXPECT_TRUE(compiler.check_output(so, *cache, R"({"a": 1})").is_ok());
  EXPECT_FALSE(compiler.check_output(so, *cache, R"({"a": "x"})").is_ok());
  EXPECT_FALSE(compiler.check_output(so, *cache, R"({"a": 1)").is_ok());  // incomplete
  EXPECT_FALSE(compiler.check_output(so, *cache, R"({})").is_ok());
  EXPECT_EQ(compiler.num_violations(), 3u);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(seen_param, "guided_json");
  EXPECT_FALSE(seen_reason.empty());
}

}  // namespace
}  // namespace strata::server
