// OutputProcessor: the engine's per-choice output state, and the only place
// that turns scheduler updates into TokenEvents.
//
// A request with n > 1 is n scheduler requests ("choices") that share one
// RequestStream. For each choice it keeps an incremental detokenizer
// (UTF-8-safe text), the stop-string matcher (stop strings are held back,
// matched across tokens, never emitted), timings and usage; it emits
// logprobs, finish reasons and usage on the final event, and records the
// latency metrics (queue time, TTFT, inter-token latency, prefill and decode
// time, end-to-end latency) and the finish counters.
//
// Stop tokens, max_tokens and max_model_len are the scheduler's decisions
// (it reports them as finish reasons); stop strings are decided here, and
// process() returns the choices that matched one while the scheduler still
// runs them, for the engine to finish there.
//
// Borrows the Tokenizer and Metrics (null: none). Engine thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/metrics.h"
#include "engine/request_stream.h"
#include "engine/step_executor.h"
#include "engine/stop_string_matcher.h"
#include "engine/token_event.h"
#include "sched/step_plan.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/status.h"

namespace strata {

// What the processor needs to know of a new choice.
struct ChoiceSpec {
  std::shared_ptr<RequestStream> stream;
  int32_t index = 0;  // 0..n-1
  int32_t min_tokens = 0;
  bool wants_logprobs = false;
  std::vector<std::string> stop;  // stop strings
  // The request's own stop_token_ids (reported as stop_reason; the model's
  // end-of-generation tokens are not).
  std::vector<int32_t> stop_token_ids;
  bool include_stop_str_in_output = false;
  bool skip_special_tokens = true;
  int64_t arrival_ns = 0;
  int64_t num_prompt_tokens = 0;
  // Prompt tokens a KV connector supplied at admission (the rest of the
  // prefix hit is the pool's own); counted per source in the metrics.
  int64_t num_connector_tokens = 0;
  // A request that may be migrated (n == 1; EngineCore::migrate).
  bool is_migratable = false;
  // Migration: the output tokens another engine produced before this one
  // continues (the scheduler sees them as the prompt's tail). add_choice()
  // replays them through the detokenizer and stop-string matcher, emitting
  // nothing; usage counts them as output, not prompt.
  std::vector<int32_t> resumed_output_tokens;
};

// What one step's updates did.
struct ProcessedStep {
  // Choices that matched a stop string while the scheduler still runs them.
  std::vector<RequestId> stopped_ids;
  // Every choice that got its final event this step (stopped_ids included).
  std::vector<RequestId> finished_ids;
};

class OutputProcessor {
 public:
  // `reports_pool_hits`: count the pool's share of prefix hits under the
  // source "pool" (when a connector reports the other sources).
  OutputProcessor(const Tokenizer& tokenizer, Metrics* metrics, bool reports_pool_hits);

  void add_choice(RequestId id, ChoiceSpec spec);
  bool has_choices() const { return !choices_.empty(); }
  size_t num_choices() const { return choices_.size(); }
  // Streams with live choices.
  std::vector<StreamId> stream_ids() const;
  // The live choices of stream `stream_id`, in index order.
  std::vector<RequestId> choices_of(StreamId stream_id) const;
  // The spec of live choice `id`; null when unknown.
  const ChoiceSpec* spec_of(RequestId id) const;

  // Records the first-scheduled metrics of the plan's new requests.
  void on_scheduled(const StepPlan& plan, int64_t now_ns);
  // Turns one step's updates into events on the choices' streams.
  ProcessedStep process(const StepOutput& output, const ExecutedStep& executed, int64_t now_ns);
  // Sends choice `id`'s final event now (abort, admission failure) and
  // forgets it. `error` is reported for kError. Unknown ids are ignored.
  void finish(RequestId id, FinishReason reason, int64_t now_ns,
              const Status& error = Status::ok());

  // Final events for all `num_choices` choices of a request that never got
  // any (aborted while loading KV, or refused at admission).
  void finish_unadmitted(RequestStream& stream, int32_t num_choices, int64_t num_prompt_tokens,
                         int64_t arrival_ns, FinishReason reason, int64_t now_ns,
                         const Status& error = Status::ok());

 private:
  struct Choice {
    Choice(const Tokenizer& tokenizer, ChoiceSpec s)
        : spec(std::move(s)),
          detokenizer(tokenizer, spec.skip_special_tokens),
          matcher(spec.stop, spec.include_stop_str_in_output) {}

    ChoiceSpec spec;
    IncrementalDetokenizer detokenizer;
    StopStringMatcher matcher;
    int64_t first_scheduled_ns = -1;
    int64_t first_token_ns = -1;
    int64_t last_token_ns = -1;
    TokenUsage usage;
  };

  // One update; returns true when the choice finished.
  bool handle_update(const RequestUpdate& u, const ExecutedStep& executed, int64_t now_ns,
                     ProcessedStep* processed);
  // Sends the final `event` for `it` and forgets the choice.
  void send_final(std::unordered_map<RequestId, Choice>::iterator it, TokenEvent event,
                  FinishReason reason, int64_t now_ns, const Status& error);
  void record_token_metrics(Choice& c, const RequestUpdate& u, int64_t now_ns);

  const Tokenizer& tokenizer_;
  Metrics* metrics_;
  bool reports_pool_hits_;
  std::unordered_map<RequestId, Choice> choices_;
  std::unordered_map<StreamId, std::vector<RequestId>> stream_choices_;  // live choices
};

}  // namespace strata
