// Grammar-constrained generation through EngineCore: outputs stay inside the
// grammar (replayed through a fresh matcher, JSON parsed), a choice whose
// grammar ended finishes with kStop at once, end-of-generation is not drawn
// before the grammar may end, a constrained request's greedy output is the
// same alone and batched, and a grammar for another vocabulary is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "engine_test_util.h"
#include "grammar/compiled_grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_spec.h"
#include "grammar/token_trie.h"

namespace strata::testing {
namespace {

std::shared_ptr<const TokenMaskCache> grammar_for(GrammarKind kind, const std::string& text) {
  static const auto trie = TokenTrie::from_tokenizer(*peaky_model().tokenizer);
  auto g = build_grammar({kind, text});
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  if (!g.is_ok()) return nullptr;
  auto c = CompiledGrammar::compile(*g);
  EXPECT_TRUE(c.is_ok()) << c.status().message();
  if (!c.is_ok()) return nullptr;
  return std::make_shared<const TokenMaskCache>(*c, trie);
}

// Replays `tokens` through a fresh matcher: every token allowed; returns
// whether the grammar may end after them.
bool replay(const std::shared_ptr<const TokenMaskCache>& cache,
            const std::vector<int32_t>& tokens) {
  GrammarMatcher m(cache);
  for (int32_t t : tokens) {
    if (m.is_terminated()) return false;
    EXPECT_TRUE(m.accept_token(t)) << "token " << t << " outside the grammar";
  }
  return m.can_terminate() || m.is_terminated();
}

GenerationRequest constrained(std::shared_ptr<const TokenMaskCache> g, uint32_t prompt_seed,
                              int32_t max_tokens, float temperature, uint64_t seed) {
  GenerationRequest r = greedy_request(random_prompt(prompt_seed, 12), max_tokens);
  r.ignore_eos = false;
  r.sampling.temperature = temperature;
  r.sampling.seed = seed;
  r.grammar = std::move(g);
  return r;
}

TEST(ConstrainedGeneration, JsonSchemaOutputsParseAndStayInGrammar) {
  STRATA_REQUIRE_MODEL();
  auto g = grammar_for(GrammarKind::kJsonSchema, R"({"type":"object","properties":{
      "ok":{"type":"boolean"},"n":{"type":"integer","minimum":0,"maximum":99},
      "tag":{"enum":["a","bc"]}},"required":["ok","n","tag"],"additionalProperties":false})");
  ASSERT_TRUE(g);
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 8; ++i) requests.push_back(constrained(g, 10 + i, 200, 1.0f, 77 + i));
  auto core = make_core(small_options(512));
  ASSERT_TRUE(core);
  auto outputs = run_to_completion(*core, requests);
  int32_t num_stopped = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const ChoiceOutput& c = outputs[i].at(0);
    ASSERT_TRUE(c.is_finished);
    EXPECT_TRUE(c.finish_reason == FinishReason::kStop || c.finish_reason == FinishReason::kLength)
        << c.error_message;
    std::vector<int32_t> body = c.tokens;
    if (!body.empty() && peaky_model().tokenizer->is_eog(body.back())) body.pop_back();
    const bool complete = replay(g, body);
    if (c.finish_reason == FinishReason::kStop) {
      ++num_stopped;
      EXPECT_TRUE(complete) << c.text;
      const auto j = nlohmann::json::parse(c.text, nullptr, false);
      ASSERT_FALSE(j.is_discarded()) << c.text;
      EXPECT_TRUE(j.at("ok").is_boolean());
      EXPECT_GE(j.at("n").get<int>(), 0);
      EXPECT_LE(j.at("n").get<int>(), 99);
    }
  }
  EXPECT_GT(num_stopped, 0);
}

TEST(ConstrainedGeneration, GrammarEndFinishesWithStop) {
  STRATA_REQUIRE_MODEL();
  auto g = grammar_for(GrammarKind::kChoice, R"(["yes", "no"])");
  ASSERT_TRUE(g);
  GenerationRequest r = constrained(g, 3, 50, 0.0f, 0);
  r.ignore_eos = true;  // the grammar alone must end it
  auto core = make_core(small_options(256));
  ASSERT_TRUE(core);
  auto out = run_to_completion(*core, {r});
  const ChoiceOutput& c = out[0].at(0);
  EXPECT_EQ(c.finish_reason, FinishReason::kStop);
  EXPECT_TRUE(c.text == "yes" || c.text == "no") << c.text;
  EXPECT_TRUE(replay(g, c.tokens));
}

TEST(ConstrainedGeneration, NoEndOfGenerationBeforeTheGrammarMayEnd) {
  STRATA_REQUIRE_MODEL();
  auto g = grammar_for(GrammarKind::kRegex, "[a-z]{4,6}");
  ASSERT_TRUE(g);
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(constrained(g, 40 + i, 30, 1.0f, 5 + i));
  auto core = make_core(small_options(256));
  ASSERT_TRUE(core);
  auto outputs = run_to_completion(*core, requests);
  for (const auto& o : outputs) {
    const ChoiceOutput& c = o.at(0);
    EXPECT_EQ(c.finish_reason, FinishReason::kStop) << c.error_message;
    EXPECT_GE(c.text.size(), 4u) << c.text;
    EXPECT_LE(c.text.size(), 6u) << c.text;
    for (char ch : c.text) EXPECT_TRUE(ch >= 'a' && ch <= 'z') << c.text;
  }
}

TEST(ConstrainedGeneration, GreedyOutputIsTheSameAloneAndBatched) {
  STRATA_REQUIRE_MODEL();
  auto g = grammar_for(GrammarKind::kJsonValue, "");
  ASSERT_TRUE(g);
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 6; ++i) {
    if (i % 2 == 0) {
      requests.push_back(constrained(g, 60 + i, 24, 0.0f, 0));
    } else {
      requests.push_back(greedy_request(random_prompt(60 + i, 20 + i), 24));
    }
  }
  std::vector<std::vector<int32_t>> solo;
  for (const auto& r : requests) {
    auto core = make_core(small_options(256));
    ASSERT_TRUE(core);
    solo.push_back(run_to_completion(*core, {r})[0].at(0).tokens);
  }
  auto core = make_core(small_options(512, 64));  // small budget: chunked prefill, mixed batches
  ASSERT_TRUE(core);
  auto outputs = run_to_completion(*core, requests);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(outputs[i].at(0).tokens, solo[i]) << "request " << i;
    if (requests[i].grammar) {
      std::vector<int32_t> body = solo[i];
      if (!body.empty() && peaky_model().tokenizer->is_eog(body.back())) body.pop_back();
      replay(g, body);
    }
  }
}

// Long keys and enum tails are forced: they arrive as several tokens in one
// event (one step), retokenized, and the output is still in the grammar.
TEST(ConstrainedGeneration, JumpForwardAppendsForcedTokens) {
  STRATA_REQUIRE_MODEL();
  auto g = grammar_for(GrammarKind::kJsonSchema, R"({"type":"object","properties":{
      "temperature_in_celsius":{"type":"integer","minimum":0,"maximum":9},
      "weather_description":{"enum":["partly cloudy","thunderstorm"]}},
      "required":["temperature_in_celsius","weather_description"],"additionalProperties":false})");
  ASSERT_TRUE(g);
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 4; ++i) requests.push_back(constrained(g, 80 + i, 120, 1.0f, 9 + i));
  auto core = make_core(small_options(256));
  ASSERT_TRUE(core);
  auto outputs = run_to_completion(*core, requests);
  int32_t num_finished = 0;
  for (const auto& o : outputs) {
    const ChoiceOutput& c = o.at(0);
    // Fewer events than tokens: some steps delivered forced tokens.
    EXPECT_LT(c.num_events, static_cast<int32_t>(c.tokens.size())) << c.text;
    std::vector<int32_t> body = c.tokens;
    if (!body.empty() && peaky_model().tokenizer->is_eog(body.back())) body.pop_back();
    const bool complete = replay(g, body);
    if (c.finish_reason != FinishReason::kStop) continue;
    ++num_finished;
    EXPECT_TRUE(complete);
    const auto j = nlohmann::json::parse(c.text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << c.text;
    const std::string w = j.at("weather_description").get<std::string>();
    EXPECT_TRUE(w == "partly cloudy" || w == "thunderstorm") << w;
  }
  EXPECT_GT(num_finished, 0);
}

TEST(ConstrainedGeneration, GrammarForAnotherVocabularyIsRefused) {
  STRATA_REQUIRE_MODEL();
  auto trie = std::make_shared<const TokenTrie>(std::vector<std::string>{"a", "b"},
                                                std::vector<int32_t>{}, std::vector<int32_t>{});
  auto g = build_grammar({GrammarKind::kRegex, "a+"});
  ASSERT_TRUE(g.is_ok());
  auto c = CompiledGrammar::compile(*g);
  ASSERT_TRUE(c.is_ok());
  GenerationRequest r = greedy_request(random_prompt(1, 5), 4);
  r.grammar = std::make_shared<const TokenMaskCache>(*c, trie);
  auto core = make_core(small_options(64));
  ASSERT_TRUE(core);
  auto s = core->add_request(r);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("grammar: compiled for a vocabulary of 2 tokens"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::testing
