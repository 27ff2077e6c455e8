// SequenceSampler::verify: speculative decoding's acceptance step must leave
// the distribution of the drawn token exactly what sample() draws from,
// whatever the draft. Checked by chi-square over many seeds on a small
// vocabulary, for a likely, an unlikely and a filtered-out draft, with and
// without filters and penalties.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sampler/sampler.h"

namespace strata {
namespace {

constexpr int32_t kVocab = 8;

// The chi-square critical value for `df` degrees of freedom at p = 1e-4
// (Wilson-Hilferty; z = 3.719): a correct sampler fails one run in 10,000.
double chi_square_critical(int df) {
  const double z = 3.719;
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

struct Case {
  const char* name;
  SamplingParams params;
  std::vector<int32_t> history;  // output tokens before (penalties read them)
};

std::vector<Case> cases() {
  std::vector<Case> out;
  SamplingParams plain;
  plain.temperature = 1.0f;
  out.push_back({"plain", plain, {}});
  SamplingParams filtered;
  filtered.temperature = 0.7f;
  filtered.top_k = 6;
  filtered.top_p = 0.95f;
  out.push_back({"top_k+top_p", filtered, {}});
  SamplingParams penalized;
  penalized.temperature = 1.3f;
  penalized.min_p = 0.02f;
  penalized.repetition_penalty = 1.5f;
  penalized.frequency_penalty = 0.4f;
  out.push_back({"penalties", penalized, {0, 0, 3}});
  return out;
}

TEST(RejectionSampling, VerifiedTokensKeepTheTargetDistribution) {
  const std::vector<float> logits = {2.0f, 1.5f, 0.3f, -0.5f, 1.0f, -3.0f, 0.0f, -9.0f};
  constexpr int kDraws = 20000;
  for (const Case& c : cases()) {
    SamplerWorkspace ws(kVocab);
    // The target: what sample() would draw from after the history.
    Result<SequenceSampler> ref = SequenceSampler::create(c.params, kVocab);
    ASSERT_TRUE(ref.is_ok());
    for (int32_t t : c.history) ref->append_output_token(t);
    const std::vector<std::pair<int32_t, double>> target = ref->distribution(logits.data(), ws);
    std::vector<double> p(kVocab, 0.0);
    for (const auto& [id, prob] : target) p[id] = prob;
    // A likely draft, an unlikely one, and one the filters remove.
    for (int32_t draft : {0, 3, 7}) {
      std::vector<int> counts(kVocab, 0);
      int accepted_count = 0;
      for (int i = 0; i < kDraws; ++i) {
        SamplingParams params = c.params;
        params.seed = 1'000'003ull * static_cast<uint64_t>(i) + static_cast<uint64_t>(draft);
        Result<SequenceSampler> s = SequenceSampler::create(params, kVocab);
        ASSERT_TRUE(s.is_ok());
        for (int32_t t : c.history) s->append_output_token(t);
        bool accepted = false;
        const SampleResult r = s->verify(logits.data(), draft, ws, &accepted);
        ASSERT_GE(r.token, 0);
        ASSERT_LT(r.token, kVocab);
        EXPECT_EQ(accepted, r.token == draft);
        ASSERT_GT(p[r.token], 0.0) << c.name << ": drew a token outside the support";
        ++counts[r.token];
        accepted_count += accepted;
        EXPECT_EQ(s->num_output_tokens(), c.history.size() + 1);
      }
      double chi2 = 0.0;
      int df = -1;
      for (int32_t id = 0; id < kVocab; ++id) {
        if (p[id] == 0.0) continue;
        const double expected = p[id] * kDraws;
        chi2 += (counts[id] - expected) * (counts[id] - expected) / expected;
        ++df;
      }
      EXPECT_LT(chi2, chi_square_critical(df))
          << c.name << ", draft " << draft << ": chi2 " << chi2 << " df " << df;
      // The draft is kept exactly as often as the target draws it.
      EXPECT_NEAR(static_cast<double>(accepted_count) / kDraws, p[draft],
                  4.0 * std::sqrt(p[draft] * (1 - p[draft]) / kDraws) + 1e-9)
          << c.name << ", draft " << draft;
    }
  }
}

TEST(RejectionSampling, GreedyKeepsOnlyTheArgmax) {
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  const std::vector<float> logits = {0.1f, 3.0f, 2.9f, -1.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  SamplerWorkspace ws(kVocab);
  for (int32_t draft = 0; draft < kVocab; ++draft) {
    Result<SequenceSampler> s = SequenceSampler::create(greedy, kVocab);
    ASSERT_TRUE(s.is_ok());
    bool accepted = false;
    const SampleResult r = s->verify(logits.data(), draft, ws, &accepted);
    EXPECT_EQ(r.token, 1);
    EXPECT_EQ(accepted, draft == 1);
  }
}

TEST(RejectionSampling, ADraftWithAllTheMassIsAlwaysKept) {
  SamplingParams p;
  p.temperature = 1.0f;
  p.top_k = 1;  // one candidate
  const std::vector<float> logits = {0.0f, 0.0f, 5.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  SamplerWorkspace ws(kVocab);
  for (uint64_t seed = 0; seed < 100; ++seed) {
    p.seed = seed;
    Result<SequenceSampler> s = SequenceSampler::create(p, kVocab);
    ASSERT_TRUE(s.is_ok());
    bool accepted = false;
    EXPECT_EQ(s->verify(logits.data(), 2, ws, &accepted).token, 2);
    EXPECT_TRUE(accepted);
    // A draft outside the only candidate is rejected for it.
    EXPECT_EQ(s->verify(logits.data(), 4, ws, &accepted).token, 2);
    EXPECT_FALSE(accepted);
  }
}

}  // namespace
}  // namespace strata
