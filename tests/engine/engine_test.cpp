// EngineCore and Engine behaviour on the tiny peaky F32 model: stop strings,
// stop tokens with min_tokens / ignore_eos, aborts, per-request failures,
// streamed text, metrics, and the threaded engine.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>

#include "engine/engine_core.h"
#include "engine_test_util.h"
#include "tokenizer/incremental_detokenizer.h"

namespace strata::testing {
namespace {

TEST(EngineOptionsTest, RefusesABadPrefillAttentionCostNamingTheFlag) {
  EXPECT_TRUE(EngineOptions().validate().is_ok());
  for (double cost : {-1.0, 1001.0, std::numeric_limits<double>::quiet_NaN()}) {
    EngineOptions o;
    o.prefill_attention_cost = cost;
    const Status st = o.validate();
    ASSERT_FALSE(st.is_ok()) << cost;
    EXPECT_NE(st.message().find("--prefill-attention-cost"), std::string::npos) << st.message();
  }
  EngineOptions o;
  o.prefill_attention_cost = 0.0;  // tokens only
  EXPECT_TRUE(o.validate().is_ok());
}

constexpr int32_t kEos = 2;  // the test tokenizer's </s>

// The text chunks IncrementalDetokenizer yields per token, plus the flush.
std::vector<std::string> text_chunks(const std::vector<int32_t>& tokens) {
  IncrementalDetokenizer d(*peaky_model().tokenizer);
  std::vector<std::string> chunks;
  for (int32_t t : tokens) chunks.push_back(d.push(t));
  chunks.push_back(d.flush());
  return chunks;
}

size_t utf8_char_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  return 4;
}

TEST(EngineCore, StreamedTextEqualsDetokenizedOutput) {
  STRATA_REQUIRE_MODEL();
  auto core = make_core(small_options(128));
  std::vector<GenerationRequest> requests;
  for (int i = 0; i < 6; ++i) requests.push_back(greedy_request(random_prompt(300 + i, 9 + i), 40));
  requests[2].sampling.temperature = 1.0f;
  requests[2].sampling.seed = 3;
  const auto outputs = run_to_completion(*core, requests);
  for (const auto& o : outputs) {
    const ChoiceOutput& c = o.at(0);
    ASSERT_EQ(c.tokens.size(), 40u);
    EXPECT_EQ(c.num_events, 40);  // one event per token, the last one final
    EXPECT_EQ(c.text, peaky_model().tokenizer->decode(c.tokens, /*skip_special=*/true));
    EXPECT_EQ(c.usage.num_output_tokens, 40);
  }
}

TEST(EngineCore, StopStringAcrossTokenBoundaryIsNotEmitted) {
  STRATA_REQUIRE_MODEL();
  const GenerationRequest base = greedy_request(random_prompt(77, 20), 60);
  const std::vector<int32_t> solo = solo_output(base);
  const std::vector<std::string> chunks = text_chunks(solo);
  // A stop string made of the last character of one token's text and the
  // first of the next one's, far enough in to leave text before it.
  std::string stop;
  for (size_t k = 5; k + 2 < chunks.size() && stop.empty(); ++k) {
    const std::string& a = chunks[k];
    const std::string& b = chunks[k + 1];
    if (a.empty() || b.empty()) continue;
    size_t start = a.size() - 1;
    while (start > 0 && (static_cast<unsigned char>(a[start]) & 0xC0) == 0x80) --start;
    stop = a.substr(start) + b.substr(0, utf8_char_length(static_cast<unsigned char>(b[0])));
  }
  ASSERT_FALSE(stop.empty());
  std::string full;
  for (const std::string& c : chunks) full += c;
  const size_t pos = full.find(stop);
  ASSERT_NE(pos, std::string::npos);
  // The token that completes the first occurrence.
  size_t num_tokens = 0;
  for (size_t len = 0; len < pos + stop.size(); ++num_tokens) len += chunks[num_tokens].size();

  GenerationRequest r = base;
  r.stop = {stop, "never-occurs-\x01"};
  auto core = make_core(small_options(128));
  const auto outputs = run_to_completion(*core, {r, base});
  const ChoiceOutput& c = outputs[0].at(0);
  EXPECT_EQ(c.finish_reason, FinishReason::kStop);
  EXPECT_EQ(c.text, full.substr(0, pos)) << "stop: " << stop;
  EXPECT_EQ(c.text.find(stop), std::string::npos);
  EXPECT_EQ(c.tokens, std::vector<int32_t>(solo.begin(), solo.begin() + num_tokens));
  // The other request ran on, unaffected.
  EXPECT_EQ(outputs[1].at(0).tokens, solo);
  EXPECT_EQ(core->kv_cache().num_free_blocks(), core->kv_cache().num_blocks());
}

GenerationRequest eos_forcing_request(int32_t min_tokens, bool ignore_eos) {
  GenerationRequest r = greedy_request(random_prompt(5, 12), 8);
  r.sampling.logit_bias = {{kEos, 1000.0f}};  // greedy picks EOS whenever allowed
  r.min_tokens = min_tokens;
  r.ignore_eos = ignore_eos;
  return r;
}

TEST(EngineCore, EosStopsUnlessIgnoredOrBeforeMinTokens) {
  STRATA_REQUIRE_MODEL();
  ASSERT_TRUE(peaky_model().tokenizer->is_eog(kEos));
  auto core = make_core(small_options(64));
  const auto outputs = run_to_completion(
      *core,
      {eos_forcing_request(0, false), eos_forcing_request(5, false), eos_forcing_request(0, true)});
  // Stops at once on EOS, which adds no text.
  const ChoiceOutput& plain = outputs[0].at(0);
  EXPECT_EQ(plain.finish_reason, FinishReason::kStop);
  EXPECT_EQ(plain.tokens, std::vector<int32_t>{kEos});
  EXPECT_EQ(plain.text, "");
  // min_tokens 5: EOS is masked for the first 5 tokens, then wins.
  const ChoiceOutput& min5 = outputs[1].at(0);
  EXPECT_EQ(min5.finish_reason, FinishReason::kStop);
  ASSERT_EQ(min5.tokens.size(), 6u);
  for (int i = 0; i < 5; ++i) EXPECT_NE(min5.tokens[i], kEos);
  EXPECT_EQ(min5.tokens[5], kEos);
  // ignore_eos: EOS is an ordinary token until max_tokens.
  const ChoiceOutput& ignored = outputs[2].at(0);
  EXPECT_EQ(ignored.finish_reason, FinishReason::kLength);
  EXPECT_EQ(ignored.tokens, std::vector<int32_t>(8, kEos));
}

TEST(EngineCore, UserStopTokenIds) {
  STRATA_REQUIRE_MODEL();
  const GenerationRequest base = greedy_request(random_prompt(91, 30), 30);
  const std::vector<int32_t> solo = solo_output(base);
  GenerationRequest r = base;
  r.stop_token_ids = {solo[6]};
  r.ignore_eos = true;  // user stop ids still apply
  auto core = make_core(small_options(64));
  const auto outputs = run_to_completion(*core, {r});
  const ChoiceOutput& c = outputs[0].at(0);
  EXPECT_EQ(c.finish_reason, FinishReason::kStop);
  const size_t first = std::find(solo.begin(), solo.end(), solo[6]) - solo.begin();
  EXPECT_EQ(c.tokens, std::vector<int32_t>(solo.begin(), solo.begin() + first + 1));
}

TEST(EngineCore, AbortFreesBlocksAtOnce) {
  STRATA_REQUIRE_MODEL();
  auto core = make_core(small_options(64, 32));
  auto keep = core->add_request(greedy_request(random_prompt(1, 40), 100));
  auto victim = core->add_request(greedy_request(random_prompt(2, 90), 100));
  ASSERT_TRUE(keep.is_ok() && victim.is_ok());
  for (int i = 0; i < 6; ++i) core->step();
  const int32_t free_before = core->kv_cache().num_free_blocks();
  core->abort((*victim)->id());
  // 90 prompt tokens + a few outputs = 6 blocks (none full-and-shared).
  EXPECT_GE(core->kv_cache().num_free_blocks() - free_before, 5);
  std::map<int32_t, ChoiceOutput> out;
  collect(**victim, &out);
  EXPECT_EQ(out.at(0).finish_reason, FinishReason::kAbort);
  EXPECT_TRUE((*victim)->is_done());
  core->abort((*victim)->id());  // twice: ignored
  core->abort(12345);            // unknown: ignored
  while (core->has_unfinished_requests()) core->step();
  std::map<int32_t, ChoiceOutput> kept;
  collect(**keep, &kept);
  EXPECT_EQ(kept.at(0).finish_reason, FinishReason::kLength);
  EXPECT_EQ(kept.at(0).tokens, solo_output(greedy_request(random_prompt(1, 40), 100)));
}

TEST(EngineCore, RequestsThatCanNeverRunAreRefusedAtOnce) {
  STRATA_REQUIRE_MODEL();
  auto core = make_core(small_options(8));  // 8 blocks of 16 = 128 tokens
  GenerationRequest bad_top_p = greedy_request(random_prompt(13, 25), 20);
  bad_top_p.sampling.top_p = 2.0f;
  const Result<std::shared_ptr<RequestStream>> a = core->add_request(bad_top_p);
  ASSERT_FALSE(a.is_ok());
  EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find("top_p"), std::string::npos);
  const Result<std::shared_ptr<RequestStream>> b =
      core->add_request(greedy_request(random_prompt(14, 250), 20));  // ctx is 256
  ASSERT_FALSE(b.is_ok());
  EXPECT_NE(b.status().message().find("--max-model-len"), std::string::npos);
  const Result<std::shared_ptr<RequestStream>> c =
      core->add_request(greedy_request(random_prompt(15, 120), 20));  // 139 slots > 128
  ASSERT_FALSE(c.is_ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("--kv-cache-memory"), std::string::npos);
  EXPECT_FALSE(core->add_request(GenerationRequest{}).is_ok());
  EXPECT_FALSE(core->add_request(greedy_request({1, 100000}, 4)).is_ok());
  EXPECT_FALSE(core->has_unfinished_requests());
}

TEST(EngineCore, FailingRequestDoesNotAffectOthers) {
  STRATA_REQUIRE_MODEL();
  const GenerationRequest a = greedy_request(random_prompt(11, 33), 20);
  const GenerationRequest b = greedy_request(random_prompt(12, 17), 20);
  // Past check_request (a caller that skipped it): the sampler rejects the
  // params on the engine thread, and the scheduler the length.
  GenerationRequest bad = greedy_request(random_prompt(13, 25), 20);
  bad.sampling.top_p = 2.0f;
  GenerationRequest too_long = greedy_request(random_prompt(14, 250), 20);  // ctx is 256
  auto core = make_core(small_options(128));
  std::shared_ptr<RequestStream> bad_stream = core->make_stream(1);
  std::shared_ptr<RequestStream> long_stream = core->make_stream(1);
  core->admit(bad, bad_stream);
  core->admit(too_long, long_stream);
  const auto outputs = run_to_completion(*core, {a, b});
  std::map<int32_t, ChoiceOutput> bad_out, long_out;
  collect(*bad_stream, &bad_out);
  collect(*long_stream, &long_out);
  EXPECT_EQ(bad_out.at(0).finish_reason, FinishReason::kError);
  EXPECT_EQ(bad_out.at(0).error_code, StatusCode::kInvalidArgument);
  EXPECT_NE(bad_out.at(0).error_message.find("top_p"), std::string::npos);
  EXPECT_EQ(long_out.at(0).finish_reason, FinishReason::kError);
  EXPECT_EQ(long_out.at(0).error_code, StatusCode::kInvalidArgument);
  EXPECT_NE(long_out.at(0).error_message.find("max-model-len"), std::string::npos);
  EXPECT_EQ(outputs[0].at(0).tokens, solo_output(a));
  EXPECT_EQ(outputs[1].at(0).tokens, solo_output(b));
  EXPECT_EQ(core->kv_cache().num_free_blocks(), core->kv_cache().num_blocks());
  EXPECT_EQ(core->executor().num_samplers(), 0u);
}

TEST(EngineCore, LogprobsAreReportedPerToken) {
  STRATA_REQUIRE_MODEL();
  GenerationRequest r = greedy_request(random_prompt(21, 10), 5);
  r.sampling.num_logprobs = 3;
  auto core = make_core(small_options(32));
  auto stream = core->add_request(r);
  ASSERT_TRUE(stream.is_ok());
  while (core->has_unfinished_requests()) core->step();
  int num_tokens = 0;
  for (const TokenEvent& e : (*stream)->drain()) {
    ASSERT_EQ(e.logprobs.size(), e.token_ids.size());
    for (size_t i = 0; i < e.token_ids.size(); ++i) {
      EXPECT_EQ(e.logprobs[i].token, e.token_ids[i]);
      ASSERT_EQ(e.logprobs[i].top_logprobs.size(), 3u);
      // Greedy: the chosen token is the most likely one.
      EXPECT_EQ(e.logprobs[i].top_logprobs[0].token, e.token_ids[i]);
      EXPECT_LE(e.logprobs[i].logprob, 0.0f);
      ++num_tokens;
    }
  }
  EXPECT_EQ(num_tokens, 5);
}

TEST(EngineCore, MetricsCountTokensFinishesAndCacheHits) {
  STRATA_REQUIRE_MODEL();
  Metrics metrics;
  auto core = make_core(small_options(128), &metrics);
  const std::vector<int32_t> prompt = random_prompt(31, 40);  // 2 full blocks
  GenerationRequest r = greedy_request(prompt, 10);
  GenerationRequest eos = eos_forcing_request(0, false);
  run_to_completion(*core, {r, eos});
  run_to_completion(*core, {r});  // hits the 32 cached tokens
  const MetricsSnapshot s = metrics.snapshot();
  EXPECT_EQ(s.generation_tokens, 10 + 1 + 10);
  EXPECT_EQ(s.prompt_tokens, 40 + 12 + 40);
  EXPECT_EQ(s.request_success_length, 2);
  EXPECT_EQ(s.request_success_stop, 1);
  EXPECT_EQ(s.prefix_cache_queries_tokens, 40 + 12 + 40);
  EXPECT_EQ(s.prefix_cache_hits_tokens, 32);
  EXPECT_EQ(s.time_to_first_token.count, 3);
  EXPECT_EQ(s.inter_token_latency.count, 9 + 0 + 9);
  EXPECT_EQ(s.e2e_request_latency.count, 3);
  EXPECT_EQ(s.request_queue_time.count, 3);
  EXPECT_EQ(s.request_prefill_time.count, 3);
  EXPECT_EQ(s.request_decode_time.count, 3);
  EXPECT_EQ(s.num_requests_running, 0);
  EXPECT_EQ(s.num_requests_waiting, 0);
  EXPECT_EQ(s.kv_cache_usage, 0.0);
}

TEST(Engine, ThreadedStreamsAbortAndShutdown) {
  STRATA_REQUIRE_MODEL();
  Result<std::unique_ptr<Engine>> engine =
      Engine::create(*peaky_model().weights, *peaky_model().tokenizer, small_options(64));
  ASSERT_TRUE(engine.is_ok()) << engine.status().message();
  const GenerationRequest a = greedy_request(random_prompt(41, 21), 30);
  auto sa = (*engine)->add_request(a);
  auto sb = (*engine)->add_request(greedy_request(random_prompt(42, 60), 150));
  ASSERT_TRUE(sa.is_ok() && sb.is_ok());
  EXPECT_NE((*sa)->id(), (*sb)->id());

  // The long one: abort after its first token; its blocks are back by the
  // time its final event arrives.
  std::optional<TokenEvent> first = (*sb)->pop();
  ASSERT_TRUE(first.has_value());
  ASSERT_FALSE(first->is_final) << first->error_message;
  (*engine)->abort((*sb)->id());
  FinishReason reason = FinishReason::kNone;
  while (std::optional<TokenEvent> e = (*sb)->pop()) {
    if (e->is_final) reason = e->finish_reason;
  }
  EXPECT_EQ(reason, FinishReason::kAbort);

  std::vector<int32_t> tokens;
  while (std::optional<TokenEvent> e = (*sa)->pop()) {
    tokens.insert(tokens.end(), e->token_ids.begin(), e->token_ids.end());
  }
  EXPECT_EQ(tokens, solo_output(a));
  EXPECT_EQ((*engine)->metrics().snapshot().request_success_abort, 1);

  // Bad requests are refused synchronously; a request still open at
  // shutdown is finished with kAbort.
  EXPECT_FALSE((*engine)->add_request(GenerationRequest{}).is_ok());
  auto open = (*engine)->add_request(greedy_request(random_prompt(43, 10), 200));
  ASSERT_TRUE(open.is_ok());
  engine->reset();
  FinishReason last = FinishReason::kNone;
  while (std::optional<TokenEvent> e = (*open)->pop()) {
    if (e->is_final) last = e->finish_reason;
  }
  EXPECT_TRUE(last == FinishReason::kAbort || last == FinishReason::kLength);
}

}  // namespace
}  // namespace strata::testing
