#include "sampler/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

namespace strata {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// A sampler with its own workspace, as one request on one thread.
struct Harness {
  SequenceSampler sampler;
  SamplerWorkspace ws;

  SampleResult sample(const float* logits) { return sampler.sample(logits, ws); }
  std::vector<std::pair<int32_t, double>> distribution(const float* logits) {
    return sampler.distribution(logits, ws);
  }
  void append_output_token(int32_t t) { sampler.append_output_token(t); }
  size_t num_output_tokens() const { return sampler.num_output_tokens(); }
};

Harness make(const SamplingParams& p, int32_t vocab, std::vector<int32_t> prompt = {}) {
  Result<SequenceSampler> s = SequenceSampler::create(p, vocab, prompt);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return Harness{std::move(s).value(), SamplerWorkspace(vocab)};
}

std::vector<double> softmax(const std::vector<float>& logits) {
  double m = -std::numeric_limits<double>::infinity();
  for (float l : logits) m = std::max(m, static_cast<double>(l));
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) sum += p[i] = std::exp(logits[i] - m);
  for (double& x : p) x /= sum;
  return p;
}

// Checks that `dist` keeps exactly `kept` ids, with softmax(logits) restricted
// and renormalized over them.
void expect_distribution(const std::vector<std::pair<int32_t, double>>& dist,
                         const std::vector<float>& logits, const std::vector<int32_t>& kept) {
  ASSERT_EQ(dist.size(), kept.size());
  double sum = 0;
  for (int32_t id : kept) sum += std::exp(static_cast<double>(logits[id]));
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(dist[i].first, kept[i]);
    EXPECT_NEAR(dist[i].second, std::exp(static_cast<double>(logits[kept[i]])) / sum, 1e-6)
        << "id " << kept[i];
  }
}

std::vector<float> log_probs(const std::vector<double>& p) {
  std::vector<float> l;
  for (double x : p) l.push_back(static_cast<float>(std::log(x)));
  return l;
}

// ---- Validation.

TEST(SamplingParams, DefaultsAreValid) {
  EXPECT_TRUE(SamplingParams{}.validate(10).is_ok());
}

TEST(SamplingParams, EachBadFieldIsNamed) {
  auto expect_bad = [](SamplingParams p, const std::string& field) {
    Status s = p.validate(10);
    ASSERT_FALSE(s.is_ok()) << field;
    EXPECT_NE(s.message().find("sampling: " + field), std::string::npos) << s.message();
  };
  SamplingParams p;
  p.temperature = -1;
  expect_bad(p, "temperature");
  p = {};
  p.temperature = kNaN;
  expect_bad(p, "temperature");
  p = {};
  p.top_k = -1;
  expect_bad(p, "top_k");
  p = {};
  p.top_p = 0;
  expect_bad(p, "top_p");
  p.top_p = 1.5f;
  expect_bad(p, "top_p");
  p = {};
  p.min_p = -0.1f;
  expect_bad(p, "min_p");
  p.min_p = 1.01f;
  expect_bad(p, "min_p");
  p = {};
  p.repetition_penalty = 0;
  expect_bad(p, "repetition_penalty");
  p = {};
  p.presence_penalty = kInf;
  expect_bad(p, "presence_penalty");
  p = {};
  p.frequency_penalty = kNaN;
  expect_bad(p, "frequency_penalty");
  p = {};
  p.logit_bias = {{10, 1.0f}};
  expect_bad(p, "logit_bias");
  p.logit_bias = {{-1, 1.0f}};
  expect_bad(p, "logit_bias");
  p.logit_bias = {{3, kInf}};
  expect_bad(p, "logit_bias");
  p = {};
  p.num_logprobs = -1;
  expect_bad(p, "num_logprobs");
  p.num_logprobs = 11;
  expect_bad(p, "num_logprobs");
  EXPECT_FALSE(SamplingParams{}.validate(0).is_ok());
}

TEST(SequenceSampler, RejectsPromptTokenOutsideVocab) {
  Result<SequenceSampler> s = SequenceSampler::create({}, 5, std::vector<int32_t>{1, 5});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("prompt token id 5"), std::string::npos);
}

// ---- Greedy.

TEST(SequenceSampler, GreedyPicksArgmaxLowestIdOnTies) {
  SamplingParams p;
  p.temperature = 0;
  Harness s = make(p, 6);
  const std::vector<float> logits = {0.5f, 3.0f, -1.0f, 3.0f, kNaN, 2.9f};
  EXPECT_EQ(s.sample(logits.data()).token, 1);
  p.temperature = 5e-6f;  // below the greedy threshold
  Harness s2 = make(p, 6);
  EXPECT_EQ(s2.sample(logits.data()).token, 1);
}

// The vectorized load and argmax against a scalar scan, on rows of odd
// lengths with ties, NaN, +inf, -inf and signed zeros in and out of whole
// 4-lane groups: the first id of the largest sanitized logit (NaN -> -inf,
// +inf -> the largest float), and an all-NaN row picks id 0.
TEST(SequenceSampler, GreedyArgmaxMatchesAScalarScanOnSpecialValues) {
  std::mt19937 rng(17);
  const float specials[] = {kNaN, kInf, -kInf, 0.0f, -0.0f, 1.0f, 1.0f, -2.5f};
  for (int32_t vocab : {1, 3, 4, 5, 37, 4099}) {
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<float> logits(static_cast<size_t>(vocab));
      for (float& x : logits) {
        x = rng() % 4 == 0 ? specials[rng() % 8] : static_cast<float>(rng() % 7) - 3.0f;
      }
      if (trial == 0) std::fill(logits.begin(), logits.end(), kNaN);
      size_t expected = 0;
      auto clean = [](float x) {
        return std::isnan(x) ? -kInf : (x == kInf ? std::numeric_limits<float>::max() : x);
      };
      for (size_t i = 1; i < logits.size(); ++i) {
        if (clean(logits[i]) > clean(logits[expected])) expected = i;
      }
      SamplingParams p;
      p.temperature = 0;
      ASSERT_EQ(make(p, vocab).sample(logits.data()).token, static_cast<int32_t>(expected))
          << "vocab " << vocab << " trial " << trial;
    }
  }
}

TEST(SequenceSampler, GreedyIgnoresSeedAndFilters) {
  const std::vector<float> logits = {0.1f, 0.2f, 0.15f, -3.0f, 0.19f};
  for (uint64_t seed : {0ull, 1ull, 12345ull}) {
    SamplingParams p;
    p.temperature = 0;
    p.seed = seed;
    p.top_k = 3;
    p.top_p = 0.2f;
    Harness s = make(p, 5);
    for (int i = 0; i < 5; ++i) EXPECT_EQ(s.sample(logits.data()).token, 1);
  }
}

TEST(SequenceSampler, NaNLogitIsNeverChosen) {
  SamplingParams p;
  p.seed = 3;
  Harness s = make(p, 3);
  const std::vector<float> logits = {kNaN, 0.0f, kNaN};
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(logits.data()).token, 1);
}

// ---- Logit bias and penalties, checked on the exact distribution.

TEST(SequenceSampler, LogitBiasIsAddedToRawLogits) {
  SamplingParams p;
  p.logit_bias = {{0, 1.5f}, {3, -2.0f}};
  Harness s = make(p, 4);
  const std::vector<float> logits = {0.0f, 1.0f, 0.5f, 2.0f};
  expect_distribution(s.distribution(logits.data()), {1.5f, 1.0f, 0.5f, 0.0f}, {0, 1, 2, 3});
  SamplingParams g = p;
  g.temperature = 0;
  EXPECT_EQ(make(g, 4).sample(logits.data()).token, 0);  // 1.5 beats 1.0 and 0.0
}

TEST(SequenceSampler, RepetitionPenaltyCoversPromptAndOutputOnce) {
  SamplingParams p;
  p.repetition_penalty = 2.0f;
  Harness s = make(p, 5, {0, 1, 1});
  const std::vector<float> logits = {2.0f, -1.0f, 0.5f, 1.0f, 3.0f};
  // Prompt tokens 0 and 1: positive divided, negative multiplied.
  expect_distribution(s.distribution(logits.data()), {1.0f, -2.0f, 0.5f, 1.0f, 3.0f},
                      {0, 1, 2, 3, 4});
  s.append_output_token(4);
  s.append_output_token(4);
  s.append_output_token(0);  // in the prompt too: still penalized once
  expect_distribution(s.distribution(logits.data()), {1.0f, -2.0f, 0.5f, 1.0f, 1.5f},
                      {0, 1, 2, 3, 4});
}

TEST(SequenceSampler, PresenceAndFrequencyPenaltiesCountOutputOnly) {
  SamplingParams p;
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Harness s = make(p, 4, {0, 1});  // prompt does not count
  const std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  s.append_output_token(2);
  s.append_output_token(2);
  s.append_output_token(3);
  // token 2: 1 - 0.5 - 2*0.25 = 0; token 3: 1 - 0.5 - 0.25 = 0.25.
  expect_distribution(s.distribution(logits.data()), {1.0f, 1.0f, 0.0f, 0.25f}, {0, 1, 2, 3});
  EXPECT_EQ(s.num_output_tokens(), 3u);
}

TEST(SequenceSampler, OneWorkspaceServesManyRequests) {
  const std::vector<float> logits = {0.3f, 0.1f, 0.5f, 0.2f, 0.4f};
  SamplingParams p;
  p.top_k = 3;
  p.seed = 8;
  Result<SequenceSampler> a = SequenceSampler::create(p, 5);
  p.top_k = 0;
  p.temperature = 0.5f;
  Result<SequenceSampler> b = SequenceSampler::create(p, 5);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  SamplerWorkspace shared(5);
  Harness alone_a = make(a->params(), 5);
  Harness alone_b = make(b->params(), 5);
  for (int i = 0; i < 50; ++i) {  // interleaved use gives the same tokens
    EXPECT_EQ(a->sample(logits.data(), shared).token, alone_a.sample(logits.data()).token);
    EXPECT_EQ(b->sample(logits.data(), shared).token, alone_b.sample(logits.data()).token);
  }
}

TEST(SequenceSampler, SampledTokensFeedPenalties) {
  SamplingParams p;
  p.temperature = 0;
  p.frequency_penalty = 1.0f;
  Harness s = make(p, 3);
  const std::vector<float> logits = {2.0f, 1.5f, 0.0f};
  // 0 (2.0) -> then 0 is 1.0 < 1.5 -> 1 -> then 1 is 0.5 < 1.0 -> 0 -> ...
  EXPECT_EQ(s.sample(logits.data()).token, 0);
  EXPECT_EQ(s.sample(logits.data()).token, 1);
  EXPECT_EQ(s.sample(logits.data()).token, 0);
  EXPECT_EQ(s.num_output_tokens(), 3u);
}

TEST(SequenceSampler, TemperatureScalesLogits) {
  SamplingParams p;
  p.temperature = 0.5f;
  Harness s = make(p, 3);
  const std::vector<float> logits = {1.0f, 0.0f, -0.5f};
  expect_distribution(s.distribution(logits.data()), {2.0f, 0.0f, -1.0f}, {0, 1, 2});
}

// ---- Filters.

TEST(SequenceSampler, TopKKeepsLargestWithLowIdOnTies) {
  SamplingParams p;
  p.top_k = 2;
  Harness s = make(p, 5);
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f, 2.0f};
  expect_distribution(s.distribution(logits.data()), logits, {1, 3});
  p.top_k = 3;
  expect_distribution(make(p, 5).distribution(logits.data()), logits, {1, 2, 3});
  p.top_k = 5;  // == vocab: off
  expect_distribution(make(p, 5).distribution(logits.data()), logits, {0, 1, 2, 3, 4});
  p.top_k = 100;
  expect_distribution(make(p, 5).distribution(logits.data()), logits, {0, 1, 2, 3, 4});
}

TEST(SequenceSampler, TopPKeepsSmallestPrefixReachingMass) {
  const std::vector<float> logits = log_probs({0.1, 0.5, 0.15, 0.25});
  SamplingParams p;
  p.top_p = 0.7f;  // 0.5 < 0.7 <= 0.75
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {1, 3});
  p.top_p = 0.45f;
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {1});
  p.top_p = 0.8f;
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {1, 2, 3});
  p.top_p = 0.95f;
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {0, 1, 2, 3});
}

TEST(SequenceSampler, TopPRenormalizesAfterTopK) {
  const std::vector<float> logits = log_probs({0.5, 0.25, 0.15, 0.1});
  SamplingParams p;
  p.top_p = 0.6f;
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {0, 1});
  p.top_k = 2;  // {2/3, 1/3}: 2/3 >= 0.6 alone
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {0});
}

TEST(SequenceSampler, MinPIsRelativeToTheMax) {
  const std::vector<float> logits = log_probs({0.5, 0.25, 0.15, 0.1});
  SamplingParams p;
  p.min_p = 0.25f;  // threshold 0.125
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {0, 1, 2});
  p.min_p = 0.45f;  // threshold 0.225
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {0, 1});
  p.min_p = 1.0f;
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {0});
}

TEST(SequenceSampler, MinPAppliesAfterTopP) {
  const std::vector<float> logits = log_probs({0.4, 0.3, 0.2, 0.1});
  SamplingParams p;
  p.top_p = 0.5f;  // keeps {0, 1}; min-p then keeps both (0.3 >= 0.24)
  p.min_p = 0.6f;  // min-p first would keep {0, 1}, renormalized 0.57 >= 0.5: only {0}
  expect_distribution(make(p, 4).distribution(logits.data()), logits, {0, 1});
}

// Top-p on a large vocabulary (growing partial sort) against a full sort.
TEST(SequenceSampler, TopPOnLargeVocabMatchesFullSort) {
  constexpr int32_t kVocab = 50021;
  SamplerRng rng(99);
  std::vector<float> logits(kVocab);
  for (float& l : logits) l = static_cast<float>(rng.next_unit() * 12.0 - 6.0);
  logits[17] = logits[40000];  // a tie
  for (float top_p : {0.01f, 0.3f, 0.9f, 0.999f}) {
    SamplingParams p;
    p.top_p = top_p;
    p.temperature = 0.7f;
    std::vector<float> scaled(kVocab);
    for (int32_t i = 0; i < kVocab; ++i) scaled[i] = logits[i] * (1.0f / 0.7f);
    std::vector<int32_t> order(kVocab);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return scaled[a] > scaled[b] || (scaled[a] == scaled[b] && a < b);
    });
    const std::vector<double> probs = softmax(scaled);
    double cumulative = 0;
    std::vector<int32_t> kept;
    for (int32_t id : order) {
      if (cumulative >= top_p) break;
      cumulative += probs[id];
      kept.push_back(id);
    }
    std::sort(kept.begin(), kept.end());
    const auto dist = make(p, kVocab).distribution(logits.data());
    ASSERT_EQ(dist.size(), kept.size()) << "top_p " << top_p;
    for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(dist[i].first, kept[i]);
  }
}

// Top-k and top logprobs on a large vocabulary with many ties (both the
// heap path, small k, and the nth_element path, large k) against a full sort.
TEST(SequenceSampler, TopKAndTopLogprobsOnLargeVocabMatchFullSort) {
  constexpr int32_t kVocab = 30011;
  SamplerRng rng(5);
  std::vector<float> logits(kVocab);
  for (float& l : logits) l = static_cast<float>(static_cast<int>(rng.next_unit() * 300)) * 0.1f;
  std::vector<int32_t> order(kVocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  double m = 0;
  for (float l : logits) m += std::exp(static_cast<double>(l) - 29.9);
  const double lse = 29.9 + std::log(m);
  for (int32_t k : {1, 7, 40, 1000, 5000, 30010}) {
    SamplingParams p;
    p.top_k = k;
    p.num_logprobs = std::min(k, 64);
    p.seed = 1;
    Harness s = make(p, kVocab);
    std::vector<int32_t> kept(order.begin(), order.begin() + k);
    std::sort(kept.begin(), kept.end());
    const auto dist = s.distribution(logits.data());
    ASSERT_EQ(dist.size(), kept.size()) << "k " << k;
    for (size_t i = 0; i < kept.size(); ++i) ASSERT_EQ(dist[i].first, kept[i]) << "k " << k;
    const SampleResult r = s.sample(logits.data());
    ASSERT_EQ(r.top_logprobs.size(), static_cast<size_t>(p.num_logprobs));
    for (int32_t i = 0; i < p.num_logprobs; ++i) {
      EXPECT_EQ(r.top_logprobs[i].token, order[i]) << "k " << k << " rank " << i;
      EXPECT_NEAR(r.top_logprobs[i].logprob, logits[order[i]] - lse, 1e-5);
    }
  }
}

TEST(SequenceSampler, SampledTokensStayInsideTheFilteredSet) {
  const std::vector<float> logits = {0.0f, 2.0f, 1.0f, 1.9f, -1.0f, 1.95f, 0.5f};
  SamplingParams p;
  p.top_k = 3;
  p.seed = 7;
  Harness s = make(p, 7);
  std::set<int32_t> seen;
  for (int i = 0; i < 500; ++i) seen.insert(s.sample(logits.data()).token);
  EXPECT_EQ(seen, (std::set<int32_t>{1, 3, 5}));
}

// ---- Randomness.

TEST(SequenceSampler, SameSeedSameTokens) {
  const std::vector<float> logits = {0.1f, 0.3f, 0.2f, 0.25f, 0.0f, 0.15f, 0.3f};
  SamplingParams p;
  p.seed = 424242;
  Harness a = make(p, 7);
  Harness b = make(p, 7);
  p.seed = 424243;
  Harness c = make(p, 7);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 200; ++i) {
    ta.push_back(a.sample(logits.data()).token);
    tb.push_back(b.sample(logits.data()).token);
    tc.push_back(c.sample(logits.data()).token);
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(SamplerRng, UnitDrawsAreInRangeAndSpread) {
  SamplerRng rng(0);
  double sum = 0;
  double lo = 1, hi = 0;
  for (int i = 0; i < 100000; ++i) {
    const double u = rng.next_unit();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    lo = std::min(lo, u);
    hi = std::max(hi, u);
  }
  EXPECT_NEAR(sum / 100000, 0.5, 0.01);
  EXPECT_LT(lo, 0.001);
  EXPECT_GT(hi, 0.999);
  SamplerRng a(5), b(5), c(6);
  const uint64_t va = a.next_u64();
  EXPECT_EQ(va, b.next_u64());
  EXPECT_NE(va, c.next_u64());
}

// 20k seeded draws against the exact probabilities: Pearson chi-square with
// 4 degrees of freedom; 30 is far in the tail (p < 1e-5) for a correct sampler,
// while a sampler that ignored temperature or mis-weighted a token exceeds it.
TEST(SequenceSampler, DrawFrequenciesMatchProbabilities) {
  const std::vector<double> probs = {0.4, 0.3, 0.15, 0.1, 0.05};
  const std::vector<float> logits = log_probs(probs);
  for (uint64_t seed : {1ull, 2ull, 3ull}) {
    SamplingParams p;
    p.seed = seed;
    Harness s = make(p, 5);
    constexpr int kDraws = 20000;
    std::vector<int> counts(5, 0);
    for (int i = 0; i < kDraws; ++i) ++counts[s.sample(logits.data()).token];
    double chi2 = 0;
    for (int k = 0; k < 5; ++k) {
      const double expected = probs[k] * kDraws;
      chi2 += (counts[k] - expected) * (counts[k] - expected) / expected;
    }
    EXPECT_LT(chi2, 30.0) << "seed " << seed;
  }
  // The same test catches a sampler that draws from the wrong distribution.
  SamplingParams hot;
  hot.temperature = 2.0f;
  Harness s = make(hot, 5);
  std::vector<int> counts(5, 0);
  for (int i = 0; i < 20000; ++i) ++counts[s.sample(logits.data()).token];
  double chi2 = 0;
  for (int k = 0; k < 5; ++k) {
    const double expected = probs[k] * 20000;
    chi2 += (counts[k] - expected) * (counts[k] - expected) / expected;
  }
  EXPECT_GT(chi2, 30.0);
}

// ---- Logprobs.

TEST(SequenceSampler, LogprobsAreOfTheRawLogits) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f, 0.5f};
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0) + std::exp(0.5));
  SamplingParams p;
  p.temperature = 0;
  p.num_logprobs = 2;
  p.logit_bias = {{0, 10.0f}};  // changes the choice, not the reported logprobs
  p.repetition_penalty = 3.0f;
  Harness s = make(p, 4, {2});
  const SampleResult r = s.sample(logits.data());
  EXPECT_EQ(r.token, 0);
  EXPECT_NEAR(r.logprob, 1.0 - lse, 1e-6);
  ASSERT_EQ(r.top_logprobs.size(), 2u);
  EXPECT_EQ(r.top_logprobs[0].token, 2);
  EXPECT_NEAR(r.top_logprobs[0].logprob, 3.0 - lse, 1e-6);
  EXPECT_EQ(r.top_logprobs[1].token, 1);
  EXPECT_NEAR(r.top_logprobs[1].logprob, 2.0 - lse, 1e-6);
}

TEST(SequenceSampler, LogprobsOfSampledTokenUnderTemperature) {
  const std::vector<float> logits = {0.2f, -0.3f, 0.9f};
  const double lse = std::log(std::exp(0.2) + std::exp(-0.3) + std::exp(0.9));
  SamplingParams p;
  p.temperature = 1.7f;
  p.seed = 11;
  p.num_logprobs = 3;
  Harness s = make(p, 3);
  for (int i = 0; i < 20; ++i) {
    const SampleResult r = s.sample(logits.data());
    EXPECT_NEAR(r.logprob, logits[r.token] - lse, 1e-6);
    ASSERT_EQ(r.top_logprobs.size(), 3u);
    EXPECT_EQ(r.top_logprobs[2].token, 1);
  }
}

TEST(SequenceSampler, NoLogprobsRequestedReturnsNone) {
  const std::vector<float> logits = {0.0f, 1.0f};
  Harness s = make({}, 2);
  EXPECT_TRUE(s.sample(logits.data()).top_logprobs.empty());
}

// ---- Edge rows.

TEST(SequenceSampler, SingleTokenVocab) {
  const float logit = -7.0f;
  SamplingParams p;
  p.top_p = 0.1f;
  p.min_p = 0.9f;
  p.top_k = 1;
  p.num_logprobs = 1;
  Harness s = make(p, 1);
  const SampleResult r = s.sample(&logit);
  EXPECT_EQ(r.token, 0);
  EXPECT_NEAR(r.logprob, 0.0, 1e-6);
}

TEST(SequenceSampler, AllMaskedButOne) {
  const std::vector<float> logits = {-kInf, -kInf, 4.0f, -kInf};
  SamplingParams p;
  p.top_p = 0.5f;
  p.seed = 2;
  Harness s = make(p, 4);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.sample(logits.data()).token, 2);
}

TEST(SequenceSampler, HugeLogitsUnderLowTemperatureStayFinite) {
  // 3e38 / 1e-4 overflows to +inf; the +inf tokens share the mass.
  const std::vector<float> logits = {3e38f, 1.0f, 3e38f};
  SamplingParams p;
  p.temperature = 1e-4f;
  p.seed = 5;
  p.num_logprobs = 1;
  Harness s = make(p, 3);
  std::set<int32_t> seen;
  for (int i = 0; i < 100; ++i) {
    const SampleResult r = s.sample(logits.data());
    seen.insert(r.token);
    EXPECT_TRUE(std::isfinite(r.logprob));
  }
  EXPECT_EQ(seen, (std::set<int32_t>{0, 2}));
}

}  // namespace
}  // namespace strata
