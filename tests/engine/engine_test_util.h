// Helpers for the engine tests: the peaky F32 test model, random prompts, and
// a driver that runs an EngineCore until every request finished and collects
// each choice's events.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_core.h"
#include "model/model_weights.h"
#include "tokenizer/tokenizer.h"

namespace strata::testing {

// Loaded once per test binary (immutable, shared by the tests).
struct TestModel {
  std::unique_ptr<ModelWeights> weights;
  std::unique_ptr<Tokenizer> tokenizer;
};

inline const TestModel& peaky_model() {
  static const TestModel* model = [] {
    auto* m = new TestModel();
    const std::string path = std::string(STRATA_BINARY_DIR) + "/models/llama-f32-peaky.gguf";
    Result<ModelWeights> w = ModelWeights::open(path);
    if (!w) return m;
    m->weights = std::make_unique<ModelWeights>(std::move(*w));
    Result<std::unique_ptr<Tokenizer>> t = Tokenizer::from_gguf(m->weights->file());
    if (t) m->tokenizer = std::move(*t);
    return m;
  }();
  return *model;
}

#define STRATA_REQUIRE_MODEL()                                                     \
  do {                                                                             \
    if (!::strata::testing::peaky_model().tokenizer) {                             \
      FAIL() << "models/llama-f32-peaky.gguf missing: run scripts/make-models.sh " \
             << STRATA_BINARY_DIR;                                                 \
    }                                                                              \
  } while (0)

// Engine options for the tiny model: `num_blocks` KV blocks of 16 tokens.
inline EngineOptions small_options(int64_t num_blocks, int64_t max_num_batched_tokens = 256) {
  EngineOptions o;
  o.block_size = 16;
  o.kv_cache_memory_bytes = static_cast<size_t>(num_blocks) *
                            KvStorage::bytes_per_block(peaky_model().weights->config(), 16);
  o.max_num_batched_tokens = max_num_batched_tokens;
  o.num_threads = 2;
  return o;
}

inline std::unique_ptr<EngineCore> make_core(const EngineOptions& options,
                                             Metrics* metrics = nullptr) {
  Result<std::unique_ptr<EngineCore>> core =
      EngineCore::create(*peaky_model().weights, *peaky_model().tokenizer, options, metrics);
  EXPECT_TRUE(core.is_ok()) << core.status().message();
  return core ? std::move(*core) : nullptr;
}

// Random ids in [3, vocab) (skipping the usual special ids), seeded.
inline std::vector<int32_t> random_prompt(uint32_t seed, int32_t length) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(3, peaky_model().weights->config().vocab_size - 1);
  std::vector<int32_t> p(length);
  for (int32_t& t : p) t = dist(rng);
  return p;
}

inline GenerationRequest greedy_request(std::vector<int32_t> prompt, int32_t max_tokens) {
  GenerationRequest r;
  r.prompt_tokens = std::move(prompt);
  r.max_tokens = max_tokens;
  r.sampling.temperature = 0.0f;
  r.ignore_eos = true;
  return r;
}

// Everything one choice received.
struct ChoiceOutput {
  std::vector<int32_t> tokens;
  std::string text;
  int32_t num_events = 0;
  bool is_finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::string error_message;
  StatusCode error_code = StatusCode::kOk;
  TokenUsage usage;
};

inline void collect(RequestStream& stream, std::map<int32_t, ChoiceOutput>* out) {
  for (TokenEvent& e : stream.drain()) {
    ChoiceOutput& c = (*out)[e.choice_index];
    EXPECT_FALSE(c.is_finished) << "event after the final one";
    c.tokens.insert(c.tokens.end(), e.token_ids.begin(), e.token_ids.end());
    c.text += e.text;
    ++c.num_events;
    if (e.is_final) {
      c.is_finished = true;
      c.finish_reason = e.finish_reason;
      c.error_message = e.error_message;
      c.error_code = e.error_code;
      c.usage = e.usage;
    }
  }
}

// Adds `requests` at once, steps until all finish (sleeping while only
// KV-tier loads are pending, which step() cannot advance); per request, per
// choice.
inline std::vector<std::map<int32_t, ChoiceOutput>> run_to_completion(
    EngineCore& core, std::vector<GenerationRequest> requests, int max_steps = 100000) {
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (GenerationRequest& r : requests) {
    Result<std::shared_ptr<RequestStream>> s = core.add_request(std::move(r));
    EXPECT_TRUE(s.is_ok()) << s.status().message();
    streams.push_back(s ? *s : nullptr);
  }
  std::vector<std::map<int32_t, ChoiceOutput>> outputs(streams.size());
  for (int step = 0; step < max_steps && core.has_unfinished_requests(); ++step) {
    if (core.is_only_loading()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    core.step();
    for (size_t i = 0; i < streams.size(); ++i) {
      if (streams[i]) collect(*streams[i], &outputs[i]);
    }
  }
  EXPECT_FALSE(core.has_unfinished_requests());
  for (size_t i = 0; i < streams.size(); ++i) {
    if (streams[i]) {
      collect(*streams[i], &outputs[i]);
      EXPECT_TRUE(streams[i]->is_done());
    }
  }
  return outputs;
}

// The greedy output of `request` served alone by a fresh engine.
inline std::vector<int32_t> solo_output(const GenerationRequest& request) {
  auto core = make_core(small_options(256));
  if (!core) return {};
  auto out = run_to_completion(*core, {request});
  return out[0][0].tokens;
}

}  // namespace strata::testing
