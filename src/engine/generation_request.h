// GenerationRequest: what a caller (the server, a benchmark) asks the engine
// for: an already tokenized prompt, how to sample, and when to stop. A plain
// value; the engine copies it.
//
// Structural checks (empty prompt, n, token ids) run in add_request; the
// sampling parameters are checked when the request's sampler is created on
// the engine thread, and a bad value finishes that request with an error
// event (a server wanting a 400 calls sampling.validate() itself first).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/resume_state.h"
#include "grammar/token_mask_cache.h"
#include "sampler/sampler.h"

namespace strata {

struct GenerationRequest {
  std::vector<int32_t> prompt_tokens;  // non-empty, ids < vocab size
  // Sampling; sampling.seed is the seed of choice 0, choice i uses seed + i.
  SamplingParams sampling;
  // Output tokens per choice: at most max_tokens; before min_tokens, stop
  // tokens are masked out of sampling and stop strings are not matched.
  int32_t max_tokens = 16;
  int32_t min_tokens = 0;
  // Texts that end a choice when they appear in its output; matched across
  // token boundaries, and neither the stop string nor anything after it is
  // emitted. Empty strings are ignored.
  std::vector<std::string> stop;
  // Extra token ids that end a choice (besides the model's end-of-generation
  // tokens); the token is reported in token_ids but adds no text.
  std::vector<int32_t> stop_token_ids;
  // Generate past the model's end-of-generation tokens (as vLLM:
  // stop_token_ids and stop strings still apply).
  bool ignore_eos = false;
  // The matched stop string, or the text of the stop token that ended a
  // choice, is part of the output (vLLM's include_stop_str_in_output).
  bool include_stop_str_in_output = false;
  // Special tokens (control tokens such as <|im_end|>) add no text.
  bool skip_special_tokens = true;
  // Parallel sampling: n choices share the prompt's KV blocks. 1..256.
  int32_t n = 1;
  // Lower runs first under --policy priority.
  int32_t priority = 0;
  // Separates prefix-cache namespaces (tenants).
  std::string cache_salt;
  // Structured output: a compiled grammar bound to this model's vocabulary
  // (GrammarCache::get). Each choice gets its own matcher; each step masks
  // the tokens the grammar forbids (end-of-generation until it may end), and
  // a choice whose grammar has ended finishes with kStop. Null: free text.
  std::shared_ptr<const TokenMaskCache> grammar;
  // Migration: continue another engine's run of this request (n == 1).
  // prompt_tokens must equal resume->prompt_tokens; max_tokens and
  // min_tokens stay the request's own (they count the outputs already
  // produced), and the events carry only the tokens after them.
  std::shared_ptr<const ResumeState> resume;
};

}  // namespace strata
