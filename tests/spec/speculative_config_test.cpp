#include "spec/speculative_config.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

TEST(SpeculativeConfig, EmptyIsOff) {
  Result<SpeculativeConfig> c = SpeculativeConfig::parse("");
  ASSERT_TRUE(c.is_ok());
  EXPECT_FALSE(c->enabled());
}

TEST(SpeculativeConfig, NgramWithVllmDefaults) {
  Result<SpeculativeConfig> c =
      SpeculativeConfig::parse(R"({"method": "ngram", "num_speculative_tokens": 4})");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->method, SpeculativeMethod::kNgram);
  EXPECT_EQ(c->num_speculative_tokens, 4);
  EXPECT_EQ(c->prompt_lookup_min, 5);
  EXPECT_EQ(c->prompt_lookup_max, 5);
  EXPECT_TRUE(c->cost_gating);
}

TEST(SpeculativeConfig, OneLookupBoundSetsTheOther) {
  Result<SpeculativeConfig> c = SpeculativeConfig::parse(
      R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4})");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->prompt_lookup_min, 4);
  EXPECT_EQ(c->prompt_lookup_max, 4);
  c = SpeculativeConfig::parse(
      R"({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 2,
          "prompt_lookup_max": 6, "gating": "off"})");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->prompt_lookup_min, 2);
  EXPECT_EQ(c->prompt_lookup_max, 6);
  EXPECT_FALSE(c->cost_gating);
  // Round trip through the start-up log's spelling.
  Result<SpeculativeConfig> again = SpeculativeConfig::parse(c->to_json());
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(again->prompt_lookup_max, 6);
  EXPECT_FALSE(again->cost_gating);
}

TEST(SpeculativeConfig, SuffixFieldsAsVllmNamesThem) {
  Result<SpeculativeConfig> c = SpeculativeConfig::parse(
      R"({"method": "suffix", "num_speculative_tokens": 8, "suffix_decoding_max_tree_depth": 32,
          "suffix_decoding_max_cached_requests": 50, "suffix_decoding_max_spec_factor": 2.5,
          "suffix_decoding_min_token_prob": 0.2})");
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->method, SpeculativeMethod::kSuffix);
  EXPECT_EQ(c->suffix_max_tree_depth, 32);
  EXPECT_EQ(c->suffix_max_cached_requests, 50);
  EXPECT_DOUBLE_EQ(c->suffix_max_spec_factor, 2.5);
  EXPECT_DOUBLE_EQ(c->suffix_min_token_prob, 0.2);
  Result<SpeculativeConfig> again = SpeculativeConfig::parse(c->to_json());
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(again->suffix_max_tree_depth, 32);
}

TEST(SpeculativeConfig, BadInputIsOneLineNamingTheProblem) {
  struct Case {
    const char* json;
    const char* expect;
  };
  const Case cases[] = {
      {"{method: ngram}", "not valid JSON"},
      {"[1, 2]", "must be a JSON object"},
      {R"({"method": "eagle", "num_speculative_tokens": 2})", "unknown method \"eagle\""},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "model": "x"})",
       "unknown field \"model\""},
      {R"({"method": "ngram"})", "\"num_speculative_tokens\" is required"},
      {R"({"num_speculative_tokens": 2})", "\"method\" is required"},
      {R"({"method": "ngram", "num_speculative_tokens": 0})", "must be in [1, 32]"},
      {R"({"method": "ngram", "num_speculative_tokens": 99})", "must be in [1, 32]"},
      {R"({"method": "ngram", "num_speculative_tokens": "4"})", "must be an integer"},
      {R"({"method": 3, "num_speculative_tokens": 4})", "\"method\" must be a string"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 4,
           "prompt_lookup_max": 2})",
       "prompt_lookup_max"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_min": 0})", ">= 1"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "gating": "maybe"})", "\"gating\""},
      {R"({"method": "suffix", "num_speculative_tokens": 2, "prompt_lookup_min": 2})",
       "ngram\" only"},
      {R"({"method": "ngram", "num_speculative_tokens": 2, "suffix_decoding_max_tree_depth": 8})",
       "suffix\" only"},
      {R"({"method": "suffix", "num_speculative_tokens": 2, "suffix_decoding_max_tree_depth": 1})",
       "[2, 256]"},
      {R"({"method": "suffix", "num_speculative_tokens": 2, "suffix_decoding_min_token_prob": 2})",
       "[0, 1]"},
      {R"({"method": "suffix", "num_speculative_tokens": 2, "suffix_decoding_max_spec_factor": "x"})",
       "must be a number"},
  };
  for (const Case& c : cases) {
    Result<SpeculativeConfig> r = SpeculativeConfig::parse(c.json);
    ASSERT_FALSE(r.is_ok()) << c.json;
    const std::string& m = r.status().message();
    EXPECT_NE(m.find("--speculative-config: "), std::string::npos) << m;
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.json << " -> " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace strata
