// Sampler: turns one row of logits into the next token of one request.
//
// SamplingParams is the per-request configuration (validated once, when the
// sampler is created). SequenceSampler holds the per-request mutable state: a
// seeded PRNG and the token counts that penalties read (O(distinct tokens),
// never O(vocab)). SamplerWorkspace holds the reusable [vocab_size] buffers;
// one workspace per sampling thread serves every request, so sample() does not
// allocate O(vocab) per call and idle requests hold no vocab-sized memory.
// Not thread-safe: a sampler belongs to one request and a workspace to one
// thread. Results are bit-identical on every x86-64 machine for the same
// seed, logits and history (own PRNG and exp, no std distributions).
//
// The pipeline of sample(), in order:
//   1. logit bias          logit[id] += bias
//   2. penalties           repetition (prompt and output tokens), then
//                          presence and frequency (output tokens only)
//   3. temperature         < 1e-5 means greedy: argmax, lowest id on ties
//   4. top-k               keep the k largest (ties broken by lower id)
//   5. top-p               keep the smallest prefix, in descending order, whose
//                          probability (renormalized after top-k) reaches top_p
//   6. min-p               keep tokens with prob >= min_p * max prob
//   7. draw                one uniform draw from the kept, renormalized mass
// NaN logits are treated as -inf. The reported logprobs are those of the raw,
// unmodified logits (log-softmax of the row as given), as vLLM reports them by
// default.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "util/status.h"
#include "util/xoshiro.h"

namespace strata {

struct SamplingParams {
  // Softmax temperature. Values < 1e-5 (including 0) select greedy decoding.
  float temperature = 1.0f;
  // Keep only the k most likely tokens; 0 disables. Must be >= 0.
  int32_t top_k = 0;
  // Nucleus sampling mass in (0, 1]; 1 disables.
  float top_p = 1.0f;
  // Minimum probability relative to the most likely token, in [0, 1]; 0 disables.
  float min_p = 0.0f;
  // Multiplicative penalty (> 0) on every token that appears in the prompt or
  // the output so far, as vLLM and Hugging Face apply it: a positive logit is
  // divided by it, a negative one multiplied. 1 disables.
  float repetition_penalty = 1.0f;
  // OpenAI-style additive penalties over output tokens only (not the prompt):
  // logit -= presence_penalty * (count > 0) + frequency_penalty * count.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // Added to the raw logit of each listed token id before anything else.
  std::vector<std::pair<int32_t, float>> logit_bias;
  // PRNG seed. Always used: a caller without a user seed picks one.
  uint64_t seed = 0;
  // How many top (id, logprob) pairs of the raw distribution to return; 0 = none.
  int32_t num_logprobs = 0;
  // Migration (engine/resume_state.h): the sampler continues another
  // engine's. The last `resume_num_output_tokens` of the prompt given to
  // SequenceSampler::create() are output tokens already produced (penalties
  // count them as outputs, not prompt), and the PRNG starts after
  // `resume_rng_draws` draws from `seed`, so the next token is the one the
  // other engine would have drawn. 0 and 0: a fresh request.
  int64_t resume_num_output_tokens = 0;
  uint64_t resume_rng_draws = 0;

  // Checks every field against its documented range and token ids against
  // `vocab_size`. The message names the field ("sampling: top_p ...").
  Status validate(int32_t vocab_size) const;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct SampleResult {
  int32_t token = 0;
  float logprob = 0.0f;  // of `token` under the raw logits' softmax; 0 unless num_logprobs > 0
  std::vector<TokenLogprob> top_logprobs;  // num_logprobs entries, most likely first
};

// Constrained decoding: sets logits[id] to -inf for every id in
// [0, vocab_size) whose bit in `allowed` (bit id % 64 of word id / 64) is
// clear; ids beyond the mask's words count as clear.
void apply_token_bitmask(std::span<const uint64_t> allowed, float* logits, int32_t vocab_size);

// The per-request generator: the same sequence on every platform.
using SamplerRng = Xoshiro256;

// Scratch buffers for SequenceSampler::sample(), [vocab_size] each
// (4 x 4 bytes per vocab entry). Reuse one per thread.
class SamplerWorkspace {
 public:
  explicit SamplerWorkspace(int32_t vocab_size);
  int32_t vocab_size() const { return static_cast<int32_t>(work.size()); }

 private:
  friend class SequenceSampler;
  std::vector<float> work;     // transformed logits
  std::vector<int32_t> ids;    // candidate ids, kept ones first
  std::vector<float> scratch;  // gathered candidate logits / top-k values
  std::vector<float> weights;  // unnormalized probabilities of the kept ids
  size_t num_kept = 0;
  bool is_identity = false;  // candidates are all ids in order; ids unused
};

class SequenceSampler {
 public:
  // Validates `params` (see SamplingParams::validate) and the prompt token ids.
  static Result<SequenceSampler> create(const SamplingParams& params, int32_t vocab_size,
                                        std::span<const int32_t> prompt_tokens = {});

  // Samples the next token from `logits` ([vocab_size] floats, the size given
  // to create()) and records it as an output token for later penalties.
  // `ws` must have the same vocab_size.
  SampleResult sample(const float* logits, SamplerWorkspace& ws);

  // Speculative decoding: draws the next token like sample() does, given
  // that a drafter proposed `draft` for it, and sets *accepted when the
  // result is the draft. Greedy: the argmax (the draft is accepted when it
  // is the argmax). Sampling: the draft is kept with probability p(draft)
  // under the distribution sample() draws from; otherwise the token comes
  // from that distribution with the draft removed, renormalized. With a
  // deterministic proposal this is rejection sampling's residual
  // max(p - q, 0), so the result is distributed exactly as sample()'s
  // (lossless), though it uses the PRNG differently (one or two draws).
  SampleResult verify(const float* logits, int32_t draft, SamplerWorkspace& ws, bool* accepted);

  // Records an output token that was chosen without sample() (e.g. forced),
  // so that penalties see it.
  void append_output_token(int32_t token);

  // The distribution the next sample() would draw from after every
  // transformation, as (id, probability) sorted by id; does not advance the
  // PRNG or record anything. For tests and debugging; allocates.
  std::vector<std::pair<int32_t, double>> distribution(const float* logits,
                                                       SamplerWorkspace& ws) const;

  const SamplingParams& params() const { return params_; }
  int32_t vocab_size() const { return vocab_size_; }
  size_t num_output_tokens() const { return num_output_tokens_; }
  // PRNG draws since the seed (resume_rng_draws included): with the seed and
  // the output tokens, the sampler's whole state (migration).
  uint64_t num_rng_draws() const { return num_rng_draws_; }

 private:
  SequenceSampler(const SamplingParams& params, int32_t vocab_size);

  bool is_greedy() const;
  // One uniform draw in [0, 1), counted.
  double draw();
  // Copies `logits` into ws.work with NaN as -inf and +inf as FLT_MAX.
  void load(const float* logits, SamplerWorkspace& ws) const;
  // log-sum-exp of the raw row in ws.work (before prepare()).
  double raw_log_sum_exp(const SamplerWorkspace& ws) const;
  // Transforms ws.work in place (steps 1-6) and leaves the kept candidates in
  // ws.ids[0, num_kept) (or ids 0..num_kept-1 when is_identity). Returns the
  // greedy token when is_greedy(), else -1.
  int32_t prepare(SamplerWorkspace& ws) const;
  // The transformed logits of candidates [0, n), contiguous.
  static const float* gather(size_t n, SamplerWorkspace& ws);
  // Fills ws.weights[0, num_kept) with unnormalized probabilities; returns their sum.
  static double kept_weights(SamplerWorkspace& ws);
  void fill_top_logprobs(double log_sum_exp, SamplerWorkspace& ws, SampleResult* out) const;

  SamplingParams params_;
  int32_t vocab_size_;
  SamplerRng rng_;
  std::unordered_set<int32_t> prompt_tokens_;
  std::unordered_map<int32_t, int32_t> output_counts_;
  size_t num_output_tokens_ = 0;
  uint64_t num_rng_draws_ = 0;
};

}  // namespace strata
