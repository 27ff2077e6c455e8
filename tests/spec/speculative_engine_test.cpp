// Speculative decoding through EngineCore: greedy output identical to
// non-speculative on every test model and prompt set (alone, batched, with
// small blocks, with stop tokens, and from prefix-cache blocks written
// while drafts were rolled back); sampled output identical across batches
// while the drafts are; and the sampled distribution kept (two-sample
// chi-square over many seeds).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../engine/engine_test_util.h"
#include "engine/engine_core.h"
#include "model/model_weights.h"
#include "tokenizer/tokenizer.h"

namespace strata::testing {
namespace {

struct LoadedModel {
  std::string name;
  std::unique_ptr<ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
};

// Every generated test model, then the trained demo model.
std::vector<std::string> model_paths() {
  std::vector<std::string> paths;
  const std::filesystem::path dir = std::filesystem::path(STRATA_BINARY_DIR) / "models";
  if (std::filesystem::is_directory(dir)) {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() == ".gguf" && e.path().stem() != "default") {
        paths.push_back(e.path().string());
      }
    }
  }
  std::sort(paths.begin(), paths.end());
  paths.push_back(std::string(STRATA_SOURCE_DIR) + "/models/default.gguf");
  return paths;
}

std::unique_ptr<LoadedModel> load(const std::string& path) {
  Result<ModelWeights> w = ModelWeights::open(path);
  if (!w) return nullptr;
  auto m = std::make_unique<LoadedModel>();
  m->name = std::filesystem::path(path).filename().string();
  m->weights = std::make_unique<ModelWeights>(std::move(*w));
  Result<std::unique_ptr<Tokenizer>> t = Tokenizer::from_gguf(m->weights->file());
  if (!t) return nullptr;
  m->tokenizer = std::move(*t);
  return m;
}

EngineOptions options_for(const LoadedModel& m, const std::string& spec_json,
                          int32_t block_size = 16) {
  EngineOptions o;
  o.block_size = block_size;
  o.kv_cache_memory_bytes = static_cast<size_t>(4096 / block_size) *
                            KvStorage::bytes_per_block(m.weights->config(), block_size);
  o.max_num_batched_tokens = 256;
  o.max_num_seqs = 64;
  o.num_threads = 2;
  o.max_model_len = std::min<int64_t>(1024, m.weights->config().context_length);
  Result<SpeculativeConfig> spec = SpeculativeConfig::parse(spec_json);
  EXPECT_TRUE(spec.is_ok()) << spec.status().message();
  if (spec) o.speculative = *spec;
  return o;
}

std::unique_ptr<EngineCore> make(const LoadedModel& m, const EngineOptions& o) {
  Result<std::unique_ptr<EngineCore>> core = EngineCore::create(*m.weights, *m.tokenizer, o);
  EXPECT_TRUE(core.is_ok()) << m.name << ": " << core.status().message();
  return core ? std::move(*core) : nullptr;
}

std::vector<int32_t> random_ids(uint32_t seed, int32_t n, int32_t vocab) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(3, vocab - 1);
  std::vector<int32_t> out(n);
  for (int32_t& t : out) t = dist(rng);
  return out;
}

std::vector<std::vector<int32_t>> tokens_of(const std::vector<std::map<int32_t, ChoiceOutput>>& o) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& m : o) out.push_back(m.empty() ? std::vector<int32_t>{} : m.at(0).tokens);
  return out;
}

constexpr const char* kEager =
    R"({"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 1,
        "prompt_lookup_max": 3, "gating": "off"})";
constexpr const char* kSuffix =
    R"({"method": "suffix", "num_speculative_tokens": 5, "suffix_decoding_min_token_prob": 0.05,
        "gating": "off"})";
constexpr const char* kLong =
    R"({"method": "ngram", "num_speculative_tokens": 7, "prompt_lookup_min": 2,
        "prompt_lookup_max": 4, "gating": "off"})";

// The prompt sets of one model: random ids, a phrase repeated, the model's
// own greedy continuation quoted back (so drafts are right often), and
// for a model with a real vocabulary, text that repeats itself.
std::vector<GenerationRequest> prompt_set(const LoadedModel& m, EngineCore& plain) {
  const int32_t vocab = m.tokenizer->vocab_size();
  std::vector<GenerationRequest> rs;
  rs.push_back(greedy_request(random_ids(1, 37, vocab), 40));
  std::vector<int32_t> phrase = random_ids(2, 9, vocab), repeated;
  for (int i = 0; i < 5; ++i) repeated.insert(repeated.end(), phrase.begin(), phrase.end());
  rs.push_back(greedy_request(repeated, 33));
  const std::vector<int32_t> p = random_ids(3, 20, vocab);
  const std::vector<int32_t> g = tokens_of(run_to_completion(plain, {greedy_request(p, 24)}))[0];
  std::vector<int32_t> quoted = p;
  quoted.insert(quoted.end(), g.begin(), g.end());
  quoted.insert(quoted.end(), p.begin(), p.end());
  rs.push_back(greedy_request(quoted, 45));
  if (m.name == "default.gguf") {
    const std::string text =
        "def area(width, height):\n    return width * height\n\n"
        "Rename width to w:\n\ndef area(w, height):\n    return w * height\n\n"
        "Rename height to h:\n\ndef area(";
    rs.push_back(greedy_request(m.tokenizer->encode(text, true, false), 48));
  }
  // Ends on the model's own EOS when it comes (not ignore_eos).
  GenerationRequest eos = greedy_request(quoted, 30);
  eos.ignore_eos = false;
  rs.push_back(eos);
  return rs;
}

TEST(SpeculativeEngine, GreedyIdenticalOnEveryModelAndPromptSet) {
  int64_t drafted = 0, accepted = 0;
  int num_models = 0;
  for (const std::string& path : model_paths()) {
    std::unique_ptr<LoadedModel> m = load(path);
    ASSERT_TRUE(m) << path << " missing: run scripts/make-models.sh " << STRATA_BINARY_DIR;
    SCOPED_TRACE(m->name);
    ++num_models;
    auto plain = make(*m, options_for(*m, ""));
    ASSERT_TRUE(plain);
    std::vector<GenerationRequest> rs = prompt_set(*m, *plain);
    const auto expected = tokens_of(run_to_completion(*plain, rs));

    // Alone, each on the same speculative engine.
    auto spec = make(*m, options_for(*m, kEager));
    ASSERT_TRUE(spec);
    for (size_t i = 0; i < rs.size(); ++i) {
      EXPECT_EQ(tokens_of(run_to_completion(*spec, {rs[i]}))[0], expected[i]) << "prompt " << i;
    }
    // Batched, with more drafts in 4-token blocks (drafts cross blocks).
    auto spec4 = make(*m, options_for(*m, kLong, 4));
    ASSERT_TRUE(spec4);
    EXPECT_EQ(tokens_of(run_to_completion(*spec4, rs)), expected);

    // Suffix decoding, batched (each request's own tree and the outputs of
    // those finished before).
    auto suffix = make(*m, options_for(*m, kSuffix));
    ASSERT_TRUE(suffix);
    EXPECT_EQ(tokens_of(run_to_completion(*suffix, rs)), expected);
    // Again, now with every output in the global tree.
    EXPECT_EQ(tokens_of(run_to_completion(*suffix, rs)), expected);

    // A stop token that the output reaches: the end may fall inside the
    // accepted drafts.
    GenerationRequest stopping = rs[2];
    if (expected[2].size() > 12) {
      stopping.stop_token_ids = {expected[2][11]};
      const auto want = tokens_of(run_to_completion(*plain, {stopping}))[0];
      EXPECT_EQ(tokens_of(run_to_completion(*spec, {stopping}))[0], want);
    }
    // Prefix-cache blocks written while drafts were verified and rolled
    // back: a prompt that continues an earlier output reuses them.
    GenerationRequest follow = greedy_request(rs[2].prompt_tokens, 16);
    follow.prompt_tokens.insert(follow.prompt_tokens.end(), expected[2].begin(),
                                expected[2].begin() + std::min<size_t>(40, expected[2].size()));
    EXPECT_EQ(tokens_of(run_to_completion(*spec4, {follow}))[0],
              tokens_of(run_to_completion(*plain, {follow}))[0]);
    EXPECT_GT(spec4->kv_cache().stats().prefix_hit_tokens, 0);

    for (EngineCore* c : {spec.get(), spec4.get(), suffix.get()}) {
      drafted += c->speculation_gate()->stats().num_draft_tokens;
      accepted += c->speculation_gate()->stats().num_accepted_tokens;
    }
  }
  EXPECT_GE(num_models, 20);
  // The test means something only if drafts were both kept and rejected.
  EXPECT_GT(accepted, 100);
  EXPECT_GT(drafted - accepted, 100);
  std::printf("speculative identity: %d models, %lld drafts, %lld accepted\n", num_models,
              static_cast<long long>(drafted), static_cast<long long>(accepted));
}

TEST(SpeculativeEngine, BatchInvariantWithSpeculationOn) {
  std::unique_ptr<LoadedModel> m =
      load(std::string(STRATA_BINARY_DIR) + "/models/llama-f32-peaky.gguf");
  ASSERT_TRUE(m);
  const int32_t vocab = m->tokenizer->vocab_size();
  std::vector<GenerationRequest> rs;
  const std::vector<int32_t> shared = random_ids(50, 40, vocab);
  for (int i = 0; i < 16; ++i) {
    std::vector<int32_t> phrase = random_ids(60 + i, 3 + i % 5, vocab), prompt;
    if (i % 3 == 0) prompt = shared;
    for (int r = 0; r < 1 + i % 4; ++r) prompt.insert(prompt.end(), phrase.begin(), phrase.end());
    prompt.push_back(static_cast<int32_t>(3 + i));
    GenerationRequest g = greedy_request(prompt, 10 + (i * 7) % 30);
    if (i % 2 == 1) {
      g.sampling.temperature = 0.8f;
      g.sampling.top_k = 20;
      g.sampling.seed = 500 + i;
    }
    rs.push_back(g);
  }
  // Each alone on a fresh speculative engine, then all at once.
  std::vector<std::vector<int32_t>> solo;
  for (const GenerationRequest& r : rs) {
    auto core = make(*m, options_for(*m, kEager));
    solo.push_back(tokens_of(run_to_completion(*core, {r}))[0]);
  }
  auto together = make(*m, options_for(*m, kEager));
  EXPECT_EQ(tokens_of(run_to_completion(*together, rs)), solo);
  EXPECT_GT(together->speculation_gate()->stats().num_accepted_tokens, 0);
  // With the cost gate on, greedy requests still match (sampled ones keep
  // their distribution, not their bits, when the gate changes the drafts).
  auto gated = make(*m, options_for(*m, R"({"method": "ngram", "num_speculative_tokens": 3})"));
  const auto got = tokens_of(run_to_completion(*gated, rs));
  for (size_t i = 0; i < rs.size(); i += 2) EXPECT_EQ(got[i], solo[i]) << "request " << i;
}

// Two-sample chi-square critical value at p = 1e-4 (Wilson-Hilferty).
double chi_square_critical(int df) {
  const double z = 3.719;
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

// Two-sample chi-square of outcome counts `a` and `b` (equal totals):
// outcomes seen >= 10 times are categories, the rest one pooled category.
// Returns {statistic, degrees of freedom}.
template <typename Key>
std::pair<double, int> two_sample_chi_square(const std::map<Key, int>& a,
                                             const std::map<Key, int>& b) {
  std::map<Key, std::pair<int, int>> joint;
  for (const auto& [k, n] : a) joint[k].first += n;
  for (const auto& [k, n] : b) joint[k].second += n;
  double chi2 = 0.0;
  int df = -1, rare_a = 0, rare_b = 0;
  for (const auto& [k, n] : joint) {
    if (n.first + n.second < 10) {
      rare_a += n.first;
      rare_b += n.second;
      continue;
    }
    chi2 += static_cast<double>(n.first - n.second) * (n.first - n.second) / (n.first + n.second);
    ++df;
  }
  if (rare_a + rare_b > 0) {
    chi2 += static_cast<double>(rare_a - rare_b) * (rare_a - rare_b) / (rare_a + rare_b);
    ++df;
  }
  return {chi2, df};
}

TEST(SpeculativeEngine, SampledOutputKeepsItsDistribution) {
  std::unique_ptr<LoadedModel> m =
      load(std::string(STRATA_BINARY_DIR) + "/models/llama-f32-peaky.gguf");
  ASSERT_TRUE(m);
  const int32_t vocab = m->tokenizer->vocab_size();
  // The prompt ends with the model's own greedy continuation, which falls
  // into a loop: sampled outputs that follow it repeat parts of it, so the
  // drafter finds them and drafts are both accepted and rejected.
  auto plain = make(*m, options_for(*m, ""));
  std::vector<int32_t> prompt = random_ids(7, 12, vocab);
  const std::vector<int32_t> g =
      tokens_of(run_to_completion(*plain, {greedy_request(prompt, 40)}))[0];
  prompt.insert(prompt.end(), g.begin(), g.end());

  constexpr int kSamples = 1500;
  constexpr int kLen = 8;
  struct Counts {
    std::map<std::vector<int32_t>, int> first_two;  // joint of outputs 0 and 1
    std::map<int32_t, int> last;                    // output kLen - 1
  };
  auto sample_all = [&](EngineCore& core, uint64_t seed_base) {
    std::vector<GenerationRequest> rs;
    for (int i = 0; i < kSamples; ++i) {
      GenerationRequest r = greedy_request(prompt, kLen);
      r.sampling.temperature = 0.8f;
      r.sampling.top_k = 8;
      r.sampling.seed = seed_base + static_cast<uint64_t>(i);
      rs.push_back(r);
    }
    Counts c;
    for (const auto& t : tokens_of(run_to_completion(core, rs))) {
      EXPECT_EQ(t.size(), static_cast<size_t>(kLen));
      if (t.size() != static_cast<size_t>(kLen)) continue;
      ++c.first_two[{t[0], t[1]}];
      ++c.last[t[kLen - 1]];
    }
    return c;
  };
  const Counts a = sample_all(*plain, 1);
  auto spec = make(*m, options_for(*m, kEager));
  const Counts b = sample_all(*spec, 1'000'000);  // independent seeds
  const GateStats& st = spec->speculation_gate()->stats();
  std::printf("sampled: %lld/%lld drafts accepted\n",
              static_cast<long long>(st.num_accepted_tokens),
              static_cast<long long>(st.num_draft_tokens));
  EXPECT_GT(st.num_accepted_tokens, kSamples);
  EXPECT_GT(st.num_draft_tokens - st.num_accepted_tokens, kSamples);
  for (const auto& [chi2, df] :
       {two_sample_chi_square(a.first_two, b.first_two), two_sample_chi_square(a.last, b.last)}) {
    ASSERT_GE(df, 3) << "too few distinct outputs to test";
    EXPECT_LT(chi2, chi_square_critical(df)) << "chi2 " << chi2 << " df " << df;
    std::printf("sampled distribution: %d categories, chi2 %.1f (critical at p=1e-4: %.1f)\n",
                df + 1, chi2, chi_square_critical(df));
  }
}

TEST(SpeculativeEngine, MetricsReportAcceptanceAndTokensPerStep) {
  std::unique_ptr<LoadedModel> m =
      load(std::string(STRATA_BINARY_DIR) + "/models/llama-f32-peaky.gguf");
  ASSERT_TRUE(m);
  Metrics metrics;
  Result<std::unique_ptr<EngineCore>> core =
      EngineCore::create(*m->weights, *m->tokenizer, options_for(*m, kEager), &metrics);
  ASSERT_TRUE(core.is_ok()) << core.status().message();
  std::vector<int32_t> phrase = random_ids(9, 6, m->tokenizer->vocab_size()), prompt;
  for (int i = 0; i < 6; ++i) prompt.insert(prompt.end(), phrase.begin(), phrase.end());
  run_to_completion(**core, {greedy_request(prompt, 40)});
  const MetricsSnapshot snap = metrics.snapshot();
  const GateStats& g = (*core)->speculation_gate()->stats();
  EXPECT_TRUE(snap.spec_decode_enabled);
  EXPECT_EQ(snap.spec_decode_num_draft_tokens, g.num_draft_tokens);
  EXPECT_EQ(snap.spec_decode_num_accepted_tokens, g.num_accepted_tokens);
  EXPECT_GT(snap.spec_decode_num_drafts, 0);
  EXPECT_GE(snap.spec_decode_tokens_per_step, 1.0);
  EXPECT_NEAR(snap.spec_decode_acceptance_rate, g.acceptance_rate(), 1e-12);
  EXPECT_EQ(snap.spec_decode_realised_gain, g.realised_gain);
  EXPECT_EQ(snap.spec_decode_num_vetoes, g.num_vetoes);
  // Output tokens = sampled + accepted drafts.
  EXPECT_EQ(snap.generation_tokens, 40);
  const std::string text = metrics.to_prometheus_text();
  for (const char* name :
       {"strata:spec_decode_num_drafts_total", "strata:spec_decode_num_draft_tokens_total",
        "strata:spec_decode_num_accepted_tokens_total", "strata:spec_decode_acceptance_rate",
        "strata:spec_decode_tokens_per_step", "strata:spec_decode_cost_ratio",
        "strata:spec_decode_realised_gain", "strata:spec_decode_num_vetoes_total"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
  // Off: nothing exported.
  Metrics off;
  Result<std::unique_ptr<EngineCore>> plain =
      EngineCore::create(*m->weights, *m->tokenizer, options_for(*m, ""), &off);
  ASSERT_TRUE(plain.is_ok());
  run_to_completion(**plain, {greedy_request(prompt, 4)});
  EXPECT_EQ(off.to_prometheus_text().find("spec_decode"), std::string::npos);
}

TEST(SpeculativeEngine, StopTokenInsideTheDraftsIsReported) {
  std::unique_ptr<LoadedModel> m =
      load(std::string(STRATA_BINARY_DIR) + "/models/llama-f32-peaky.gguf");
  ASSERT_TRUE(m);
  auto plain = make(*m, options_for(*m, ""));
  auto spec = make(*m, options_for(*m, kEager));
  auto final_event = [](EngineCore& core, const GenerationRequest& r) {
    Result<std::shared_ptr<RequestStream>> stream = core.add_request(r);
    EXPECT_TRUE(stream.is_ok());
    TokenEvent last;
    std::vector<int32_t> tokens;
    for (int i = 0; i < 1000 && core.has_unfinished_requests(); ++i) {
      core.step();
      for (TokenEvent& e : (*stream)->drain()) {
        tokens.insert(tokens.end(), e.token_ids.begin(), e.token_ids.end());
        if (e.is_final) last = e;
      }
    }
    return std::make_pair(tokens, last);
  };
  // Prompts that quote the model's own continuation (so drafts hold), each
  // stopped on its tenth output token.
  for (uint32_t seed = 40; seed < 48; ++seed) {
    const std::vector<int32_t> p = random_ids(seed, 16, m->tokenizer->vocab_size());
    const std::vector<int32_t> g = tokens_of(run_to_completion(*plain, {greedy_request(p, 24)}))[0];
    std::vector<int32_t> prompt = p;
    prompt.insert(prompt.end(), g.begin(), g.end());
    prompt.insert(prompt.end(), p.begin(), p.end());
    GenerationRequest r = greedy_request(prompt, 30);
    const std::vector<int32_t> full = tokens_of(run_to_completion(*plain, {r}))[0];
    ASSERT_GT(full.size(), 10u);
    r.stop_token_ids = {full[9]};
    const auto [want_tokens, want] = final_event(*plain, r);
    const auto [got_tokens, got] = final_event(*spec, r);
    EXPECT_EQ(got_tokens, want_tokens) << "seed " << seed;
    EXPECT_EQ(got.finish_reason, FinishReason::kStop) << "seed " << seed;
    EXPECT_EQ(got.stop_token_id, full[9]) << "seed " << seed;
    EXPECT_EQ(got.stop_token_id, want.stop_token_id) << "seed " << seed;
    EXPECT_EQ(got.usage.num_output_tokens, want.usage.num_output_tokens) << "seed " << seed;
  }
  EXPECT_GT(spec->speculation_gate()->stats().num_accepted_tokens, 8);
}

TEST(SpeculativeEngine, SuffixDraftsFromEarlierOutputs) {
  std::unique_ptr<LoadedModel> m =
      load(std::string(STRATA_BINARY_DIR) + "/models/llama-f32-peaky.gguf");
  ASSERT_TRUE(m);
  auto plain = make(*m, options_for(*m, ""));
  auto spec = make(*m, options_for(*m, kSuffix));
  ASSERT_TRUE(plain && spec);
  // The same prompt twice, one after the other: the second run finds the
  // first's output in the global tree (drafts grow with the match length).
  const GenerationRequest r = greedy_request(random_ids(21, 30, m->tokenizer->vocab_size()), 40);
  const auto want = tokens_of(run_to_completion(*plain, {r}))[0];
  EXPECT_EQ(tokens_of(run_to_completion(*spec, {r}))[0], want);
  const int64_t accepted_first = spec->speculation_gate()->stats().num_accepted_tokens;
  EXPECT_EQ(tokens_of(run_to_completion(*spec, {r}))[0], want);
  const int64_t accepted_second =
      spec->speculation_gate()->stats().num_accepted_tokens - accepted_first;
  EXPECT_GE(accepted_second, 20) << "first run accepted " << accepted_first;
}

}  // namespace
}  // namespace strata::testing
