// OutputProcessor turns scheduler updates into events: text deltas that
// concatenate to the output, stop strings held back and cut, the final
// event's reason, usage and error, and the choices it stopped.
#include "engine/output_processor.h"

#include <gtest/gtest.h>

#include <string>

#include "engine_test_util.h"

namespace strata::testing {
namespace {

RequestUpdate token(RequestId id, int32_t t, int64_t num_out,
                    FinishReason r = FinishReason::kNone) {
  RequestUpdate u;
  u.request_id = id;
  u.has_new_token = true;
  u.new_token = t;
  u.finish_reason = r;
  u.num_prompt_tokens = 3;
  u.num_output_tokens = num_out;
  return u;
}

// The ids of the token texts `text` (one per byte of a byte-level vocab is
// not guaranteed, so tokenize).
std::vector<int32_t> ids_of(const std::string& text) {
  return peaky_model().tokenizer->encode(text, /*add_special=*/false, /*parse_special=*/false);
}

ChoiceSpec spec_of(std::shared_ptr<RequestStream> stream, std::vector<std::string> stop = {}) {
  ChoiceSpec c;
  c.stream = std::move(stream);
  c.stop = std::move(stop);
  c.num_prompt_tokens = 3;
  return c;
}

TEST(OutputProcessor, StopStringIsCutAndTheChoiceReportedStopped) {
  STRATA_REQUIRE_MODEL();
  Metrics metrics;
  OutputProcessor out(*peaky_model().tokenizer, &metrics, false);
  auto stream = std::make_shared<RequestStream>(7, 1);
  out.add_choice(1, spec_of(stream, {"world"}));
  const std::vector<int32_t> ids = ids_of("hello world again");
  ProcessedStep last;
  for (size_t i = 0; i < ids.size() && out.has_choices(); ++i) {
    StepOutput o;
    o.updates.push_back(token(1, ids[i], static_cast<int64_t>(i + 1)));
    last = out.process(o, ExecutedStep{}, static_cast<int64_t>(i));
  }
  EXPECT_FALSE(out.has_choices());
  EXPECT_EQ(last.stopped_ids, (std::vector<RequestId>{1}));
  EXPECT_EQ(last.finished_ids, (std::vector<RequestId>{1}));
  std::map<int32_t, ChoiceOutput> got;
  collect(*stream, &got);
  EXPECT_EQ(got[0].text, "hello ");
  EXPECT_EQ(got[0].finish_reason, FinishReason::kStop);
  EXPECT_TRUE(stream->is_done());
  EXPECT_EQ(metrics.snapshot().request_success_stop, 1);
}

// A grammar that ends after an ordinary token (a closing brace) finishes
// with kStop; that token's text is output, unlike a stop token's.
TEST(OutputProcessor, GrammarEndKeepsTheLastTokensText) {
  STRATA_REQUIRE_MODEL();
  for (const bool by_grammar : {true, false}) {
    Metrics metrics;
    OutputProcessor out(*peaky_model().tokenizer, &metrics, false);
    auto stream = std::make_shared<RequestStream>(7, 1);
    out.add_choice(1, spec_of(stream));
    const std::vector<int32_t> ids = ids_of("ab}");
    for (size_t i = 0; i < ids.size(); ++i) {
      StepOutput o;
      const bool last = i + 1 == ids.size();
      o.updates.push_back(token(1, ids[i], static_cast<int64_t>(i + 1),
                                last ? FinishReason::kStop : FinishReason::kNone));
      o.updates.back().ends_on_stop_token = last && !by_grammar;
      out.process(o, ExecutedStep{}, static_cast<int64_t>(i));
    }
    std::map<int32_t, ChoiceOutput> got;
    collect(*stream, &got);
    std::string expected = "ab}";
    if (!by_grammar) {  // the last token was a stop token: its text is dropped
      expected =
          peaky_model().tokenizer->decode(std::vector<int32_t>(ids.begin(), ids.end() - 1), false);
    }
    EXPECT_EQ(got[0].text, expected) << by_grammar;
    EXPECT_EQ(got[0].finish_reason, FinishReason::kStop);
  }
}

TEST(OutputProcessor, ErrorsCarryTheirCodeAndLengthFlushesHeldText) {
  STRATA_REQUIRE_MODEL();
  OutputProcessor out(*peaky_model().tokenizer, nullptr, false);
  auto stream = std::make_shared<RequestStream>(8, 2);
  out.add_choice(1, spec_of(stream, {"wor"}));
  ChoiceSpec second = spec_of(stream);
  second.index = 1;
  out.add_choice(2, std::move(second));
  EXPECT_EQ(out.choices_of(8), (std::vector<RequestId>{1, 2}));
  // "w" may start "wor": held back until the stream ends for another reason.
  const std::vector<int32_t> w = ids_of("w");
  ASSERT_EQ(w.size(), 1u);
  StepOutput o;
  o.updates.push_back(token(1, w[0], 1, FinishReason::kLength));
  RequestUpdate failed;
  failed.request_id = 2;
  failed.finish_reason = FinishReason::kError;
  o.updates.push_back(failed);
  ExecutedStep executed;
  executed.errors.emplace(2, invalid_argument("sampling: bad"));
  const ProcessedStep p = out.process(o, executed, 0);
  EXPECT_TRUE(p.stopped_ids.empty());
  EXPECT_EQ(p.finished_ids.size(), 2u);
  std::map<int32_t, ChoiceOutput> got;
  collect(*stream, &got);
  EXPECT_EQ(got[0].text, "w");
  EXPECT_EQ(got[0].finish_reason, FinishReason::kLength);
  EXPECT_EQ(got[1].finish_reason, FinishReason::kError);
  EXPECT_EQ(got[1].error_code, StatusCode::kInvalidArgument);
  EXPECT_EQ(got[1].error_message, "sampling: bad");
  EXPECT_TRUE(stream->is_done());
}

TEST(OutputProcessor, UnadmittedRequestsGetAFinalEventPerChoice) {
  STRATA_REQUIRE_MODEL();
  OutputProcessor out(*peaky_model().tokenizer, nullptr, false);
  RequestStream stream(9, 3);
  out.finish_unadmitted(stream, 3, 12, 0, FinishReason::kError, 5,
                        invalid_argument("request: too long"));
  std::map<int32_t, ChoiceOutput> got;
  collect(stream, &got);
  ASSERT_EQ(got.size(), 3u);
  for (auto& [i, c] : got) {
    EXPECT_EQ(c.finish_reason, FinishReason::kError);
    EXPECT_EQ(c.error_code, StatusCode::kInvalidArgument);
    EXPECT_EQ(c.usage.num_prompt_tokens, 12);
  }
  EXPECT_TRUE(stream.is_done());
}

}  // namespace
}  // namespace strata::testing
