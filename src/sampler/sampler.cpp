#include "sampler/sampler.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <string>

namespace strata {
namespace {

constexpr float kGreedyTemperature = 1e-5f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// First prefix examined by top-p when top-k did not already sort the
// candidates; grows 4x until the mass is reached, so a peaked distribution
// never sorts the whole vocabulary.
constexpr size_t kTopPFirstPrefix = 128;

// NaN becomes -inf (never chosen); +inf becomes the largest float so that
// log-softmax stays finite.
float sanitize(float x) {
  if (std::isnan(x)) return kNegInf;
  if (x == std::numeric_limits<float>::infinity()) return std::numeric_limits<float>::max();
  return x;
}

// exp(d) for d <= 0, the same bits in the scalar and SSE2 versions (same
// float operations, no FMA on baseline x86-64): a degree-6 polynomial after
// range reduction by ln 2, relative error < 1e-7; d < -87 gives 0. libm's exp
// is ~4x slower and sample() runs it over the whole vocabulary.
constexpr float kExpFloor = -87.0f;
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

float exp_nonpos(float d) {
  if (!(d >= kExpFloor)) return 0.0f;
  const int32_t ni = static_cast<int32_t>(std::nearbyint(d * kLog2e));
  const float n = static_cast<float>(ni);
  float r = d - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = kExpPoly[0];
  for (int i = 1; i < 6; ++i) p = p * r + kExpPoly[i];
  p = p * r * r + r + 1.0f;
  const int32_t bits = (ni + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

#if defined(__SSE2__)
__m128 exp_nonpos4(__m128 d) {
  const __m128 in_range = _mm_cmpge_ps(d, _mm_set1_ps(kExpFloor));
  d = _mm_max_ps(d, _mm_set1_ps(kExpFloor));
  const __m128i ni = _mm_cvtps_epi32(_mm_mul_ps(d, _mm_set1_ps(kLog2e)));  // round to nearest
  const __m128 n = _mm_cvtepi32_ps(ni);
  __m128 r = _mm_sub_ps(d, _mm_mul_ps(n, _mm_set1_ps(kLn2Hi)));
  r = _mm_sub_ps(r, _mm_mul_ps(n, _mm_set1_ps(kLn2Lo)));
  __m128 p = _mm_set1_ps(kExpPoly[0]);
  for (int i = 1; i < 6; ++i) p = _mm_add_ps(_mm_mul_ps(p, r), _mm_set1_ps(kExpPoly[i]));
  p = _mm_add_ps(_mm_add_ps(_mm_mul_ps(_mm_mul_ps(p, r), r), r), _mm_set1_ps(1.0f));
  const __m128 scale = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(ni, _mm_set1_epi32(127)), 23));
  return _mm_and_ps(_mm_mul_ps(p, scale), in_range);
}
#endif

// Largest of x[0, n); n >= 1 and no NaN.
float max_of(const float* x, size_t n) {
  size_t i = 0;
  float m = kNegInf;
#if defined(__SSE2__)
  __m128 mv = _mm_set1_ps(kNegInf);
  for (; i + 4 <= n; i += 4) mv = _mm_max_ps(mv, _mm_loadu_ps(x + i));
  float lanes[4];
  _mm_storeu_ps(lanes, mv);
  m = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
#endif
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

// sum(exp(x[i] - max_logit)) for a finite max_logit >= every x[i]; writes each
// term to out[i] when out is not null. Float terms, summed in float over
// blocks of 64 and across blocks in double.
double sum_exp_shifted(const float* x, size_t n, float max_logit, float* out) {
  double total = 0.0;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128 mv = _mm_set1_ps(max_logit);
  for (; i + 64 <= n; i += 64) {
    __m128 acc0 = _mm_setzero_ps();
    __m128 acc1 = _mm_setzero_ps();
    for (size_t k = i; k < i + 64; k += 8) {
      const __m128 e0 = exp_nonpos4(_mm_sub_ps(_mm_loadu_ps(x + k), mv));
      const __m128 e1 = exp_nonpos4(_mm_sub_ps(_mm_loadu_ps(x + k + 4), mv));
      if (out != nullptr) {
        _mm_storeu_ps(out + k, e0);
        _mm_storeu_ps(out + k + 4, e1);
      }
      acc0 = _mm_add_ps(acc0, e0);
      acc1 = _mm_add_ps(acc1, e1);
    }
    float lanes[4];
    _mm_storeu_ps(lanes, _mm_add_ps(acc0, acc1));
    total += static_cast<double>(lanes[0] + lanes[1]) + static_cast<double>(lanes[2] + lanes[3]);
  }
#endif
  for (; i < n; ++i) {
    const float e = exp_nonpos(x[i] - max_logit);
    if (out != nullptr) out[i] = e;
    total += e;
  }
  return total;
}

// Writes to ids[0, k) the ids of the k largest of x[0, n) (ties: lower id
// first), sorted best first; 1 <= k <= n, no NaN. Finds the k-th largest value
// with a size-k min-heap when k is small (one compare per element for typical
// rows), else with nth_element on a copy in `scratch` ([n] floats); then
// collects the ids in one pass.
void select_top_k(const float* x, size_t n, size_t k, float* scratch, int32_t* ids) {
  float kth;
  if (k * 16 <= n) {
    float* heap = scratch;  // min-heap of the k largest so far
    std::copy(x, x + k, heap);
    std::make_heap(heap, heap + k, std::greater<float>());
    for (size_t i = k; i < n; ++i) {
      if (x[i] > heap[0]) {
        std::pop_heap(heap, heap + k, std::greater<float>());
        heap[k - 1] = x[i];
        std::push_heap(heap, heap + k, std::greater<float>());
      }
    }
    kth = heap[0];
  } else {
    std::copy(x, x + n, scratch);
    std::nth_element(scratch, scratch + k - 1, scratch + n, std::greater<float>());
    kth = scratch[k - 1];
  }
  size_t m = 0;
  for (size_t i = 0; i < n; ++i) {
    if (x[i] > kth) ids[m++] = static_cast<int32_t>(i);
  }
  for (size_t i = 0; i < n && m < k; ++i) {
    if (x[i] == kth) ids[m++] = static_cast<int32_t>(i);
  }
  std::sort(ids, ids + k,
            [x](int32_t a, int32_t b) { return x[a] > x[b] || (x[a] == x[b] && a < b); });
}

// Unnormalized probability of logit `x` given the largest logit `max_logit`
// of the candidate set. Temperature can overflow logits to +inf: then the
// +inf ones share the mass; when every logit is -inf they share it evenly.
double weight(float x, float max_logit) {
  if (std::isinf(max_logit)) return x == max_logit ? 1.0 : 0.0;
  return exp_nonpos(x - max_logit);
}

bool is_finite(float x) {
  return std::isfinite(x);
}

}  // namespace

// ---- SamplingParams

Status SamplingParams::validate(int32_t vocab_size) const {
  auto bad = [](const std::string& field, const std::string& why) {
    return invalid_argument("sampling: " + field + " " + why);
  };
  if (vocab_size <= 0) return bad("vocab_size", "must be positive");
  if (!is_finite(temperature) || temperature < 0) {
    return bad("temperature", "must be a finite number >= 0, got " + std::to_string(temperature));
  }
  if (top_k < 0) return bad("top_k", "must be >= 0 (0 disables), got " + std::to_string(top_k));
  if (!(top_p > 0 && top_p <= 1)) {
    return bad("top_p", "must be in (0, 1], got " + std::to_string(top_p));
  }
  if (!(min_p >= 0 && min_p <= 1)) {
    return bad("min_p", "must be in [0, 1], got " + std::to_string(min_p));
  }
  if (!is_finite(repetition_penalty) || repetition_penalty <= 0) {
    return bad("repetition_penalty",
               "must be a finite number > 0, got " + std::to_string(repetition_penalty));
  }
  if (!is_finite(presence_penalty)) return bad("presence_penalty", "must be finite");
  if (!is_finite(frequency_penalty)) return bad("frequency_penalty", "must be finite");
  for (const auto& [token, bias] : logit_bias) {
    if (token < 0 || token >= vocab_size) {
      return bad("logit_bias", "token id " + std::to_string(token) + " is outside [0, " +
                                   std::to_string(vocab_size) + ")");
    }
    if (!is_finite(bias)) {
      return bad("logit_bias", "value for token " + std::to_string(token) + " must be finite");
    }
  }
  if (num_logprobs < 0 || num_logprobs > vocab_size) {
    return bad("num_logprobs", "must be in [0, " + std::to_string(vocab_size) + "], got " +
                                   std::to_string(num_logprobs));
  }
  if (resume_num_output_tokens < 0) return bad("resume_num_output_tokens", "must be >= 0");
  // A token costs at most two draws (a rejected draft and its residual).
  if (resume_rng_draws > 2 * static_cast<uint64_t>(resume_num_output_tokens)) {
    return bad("resume_rng_draws", "must be at most 2 per output token");
  }
  return Status::ok();
}

// ---- SamplerWorkspace

SamplerWorkspace::SamplerWorkspace(int32_t vocab_size)
    : work(static_cast<size_t>(vocab_size)),
      ids(static_cast<size_t>(vocab_size)),
      scratch(static_cast<size_t>(vocab_size)),
      weights(static_cast<size_t>(vocab_size)) {}

// ---- SequenceSampler

SequenceSampler::SequenceSampler(const SamplingParams& params, int32_t vocab_size)
    : params_(params), vocab_size_(vocab_size), rng_(params.seed) {}

Result<SequenceSampler> SequenceSampler::create(const SamplingParams& params, int32_t vocab_size,
                                                std::span<const int32_t> prompt_tokens) {
  STRATA_RETURN_IF_ERROR(params.validate(vocab_size));
  for (int32_t token : prompt_tokens) {
    if (token < 0 || token >= vocab_size) {
      return invalid_argument("sampling: prompt token id " + std::to_string(token) +
                              " is outside [0, " + std::to_string(vocab_size) + ")");
    }
  }
  if (params.resume_num_output_tokens >= static_cast<int64_t>(prompt_tokens.size()) &&
      params.resume_num_output_tokens > 0) {
    return invalid_argument("sampling: resume_num_output_tokens must be below the prompt's " +
                            std::to_string(prompt_tokens.size()) + " tokens");
  }
  const size_t num_prompt =
      prompt_tokens.size() - static_cast<size_t>(params.resume_num_output_tokens);
  SequenceSampler s(params, vocab_size);
  if (params.repetition_penalty != 1.0f) {
    s.prompt_tokens_.insert(prompt_tokens.begin(),
                            prompt_tokens.begin() + static_cast<std::ptrdiff_t>(num_prompt));
  }
  for (size_t i = num_prompt; i < prompt_tokens.size(); ++i) {
    s.append_output_token(prompt_tokens[i]);
  }
  for (uint64_t i = 0; i < params.resume_rng_draws; ++i) s.draw();
  return s;
}

void SequenceSampler::append_output_token(int32_t token) {
  assert(token >= 0 && token < vocab_size_);
  ++output_counts_[token];
  ++num_output_tokens_;
}

double SequenceSampler::draw() {
  ++num_rng_draws_;
  return rng_.next_unit();
}

bool SequenceSampler::is_greedy() const {
  return params_.temperature < kGreedyTemperature;
}

void SequenceSampler::load(const float* logits, SamplerWorkspace& ws) const {
  float* work = ws.work.data();
  int32_t i = 0;
#if defined(__SSE2__)
  // sanitize(), four at a time: NaN (unordered with itself) to -inf, +inf
  // to the largest float.
  const __m128 neg_inf = _mm_set1_ps(kNegInf);
  const __m128 pos_inf = _mm_set1_ps(std::numeric_limits<float>::infinity());
  const __m128 largest = _mm_set1_ps(std::numeric_limits<float>::max());
  for (; i + 4 <= vocab_size_; i += 4) {
    __m128 x = _mm_loadu_ps(logits + i);
    const __m128 nan = _mm_cmpunord_ps(x, x);
    const __m128 inf = _mm_cmpeq_ps(x, pos_inf);
    x = _mm_or_ps(_mm_andnot_ps(inf, x), _mm_and_ps(inf, largest));
    x = _mm_or_ps(_mm_andnot_ps(nan, x), _mm_and_ps(nan, neg_inf));
    _mm_storeu_ps(work + i, x);
  }
#endif
  for (; i < vocab_size_; ++i) work[i] = sanitize(logits[i]);
}

double SequenceSampler::raw_log_sum_exp(const SamplerWorkspace& ws) const {
  const float* work = ws.work.data();
  const size_t n = static_cast<size_t>(vocab_size_);
  const float max_logit = max_of(work, n);  // finite or -inf after sanitize()
  if (max_logit == kNegInf) return -std::numeric_limits<double>::infinity();
  return max_logit + std::log(sum_exp_shifted(work, n, max_logit, nullptr));
}

int32_t SequenceSampler::prepare(SamplerWorkspace& ws) const {
  float* work = ws.work.data();
  const size_t vocab = static_cast<size_t>(vocab_size_);

  // 1. Logit bias.
  for (const auto& [token, bias] : params_.logit_bias) work[token] += bias;

  // 2. Penalties. Repetition covers prompt and output tokens, each once.
  const float rep = params_.repetition_penalty;
  auto apply_repetition = [&](int32_t token) {
    work[token] = work[token] > 0 ? work[token] / rep : work[token] * rep;
  };
  if (rep != 1.0f) {
    for (int32_t token : prompt_tokens_) apply_repetition(token);
    for (const auto& [token, count] : output_counts_) {
      if (prompt_tokens_.count(token) == 0) apply_repetition(token);
    }
  }
  if (params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f) {
    for (const auto& [token, count] : output_counts_) {
      work[token] -=
          params_.presence_penalty + params_.frequency_penalty * static_cast<float>(count);
    }
  }

  // 3. Temperature (or greedy).
  if (is_greedy()) {
    // The first id holding the maximum (ties: the lower id), found with the
    // vectorized max and one scan that stops there.
    const float top = max_of(work, vocab);
    size_t best = 0;
    while (best + 1 < vocab && work[best] != top) ++best;
    ws.ids[0] = static_cast<int32_t>(best);
    ws.num_kept = 1;
    ws.is_identity = false;
    return static_cast<int32_t>(best);
  }
  if (params_.temperature != 1.0f) {
    const float inv_t = 1.0f / params_.temperature;
    for (size_t i = 0; i < vocab; ++i) work[i] *= inv_t;
  }

  // Candidates are ws.ids[0, n). Until a filter runs they are every id in
  // order (ws.is_identity), and ws.ids is not filled. `better` orders by logit,
  // then by lower id.
  size_t n = vocab;
  ws.is_identity = true;
  auto materialize = [&] {
    if (ws.is_identity) std::iota(ws.ids.begin(), ws.ids.end(), 0);
    ws.is_identity = false;
  };
  auto better = [work](int32_t a, int32_t b) {
    return work[a] > work[b] || (work[a] == work[b] && a < b);
  };
  bool is_sorted = false;

  // 4. Top-k.
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    n = static_cast<size_t>(params_.top_k);
    select_top_k(work, vocab, n, ws.scratch.data(), ws.ids.data());
    ws.is_identity = false;
    is_sorted = true;
  }

  // 5. Top-p over the candidates left by top-k.
  if (params_.top_p < 1.0f) {
    const float* vals = gather(n, ws);
    const float max_logit = max_of(vals, n);
    const double total = std::isinf(max_logit) ? 0.0 : sum_exp_shifted(vals, n, max_logit, nullptr);
    const double target = static_cast<double>(params_.top_p) * total;
    materialize();
    size_t prefix = is_sorted ? n : std::min(n, kTopPFirstPrefix);
    while (!std::isinf(max_logit)) {  // an infinite max leaves the set to min-p/draw
      if (!is_sorted) {
        std::partial_sort(ws.ids.begin(), ws.ids.begin() + static_cast<ptrdiff_t>(prefix),
                          ws.ids.begin() + static_cast<ptrdiff_t>(n), better);
      }
      double cumulative = 0.0;
      size_t keep = 0;
      while (keep < prefix && cumulative < target) {
        cumulative += weight(work[ws.ids[keep]], max_logit);
        ++keep;
      }
      if (cumulative >= target || prefix == n) {
        n = std::max<size_t>(keep, 1);
        is_sorted = true;
        break;
      }
      prefix = std::min(n, prefix * 4);
    }
  }

  // 6. Min-p, relative to the most likely remaining token.
  if (params_.min_p > 0.0f) {
    const float max_logit = max_of(gather(n, ws), n);
    // At max_logit = +inf the threshold is +inf: only the +inf ones stay.
    const float threshold = max_logit + std::log(params_.min_p);
    size_t kept = 0;
    if (ws.is_identity) {
      for (size_t i = 0; i < n; ++i) {
        if (work[i] >= threshold) ws.ids[kept++] = static_cast<int32_t>(i);
      }
      ws.is_identity = false;
    } else {
      for (size_t i = 0; i < n; ++i) {
        if (work[ws.ids[i]] >= threshold) ws.ids[kept++] = ws.ids[i];
      }
    }
    n = std::max<size_t>(kept, 1);  // the max itself always passes; guard anyway
  }
  ws.num_kept = n;
  return -1;
}

const float* SequenceSampler::gather(size_t n, SamplerWorkspace& ws) {
  if (ws.is_identity) return ws.work.data();
  float* vals = ws.scratch.data();
  for (size_t i = 0; i < n; ++i) vals[i] = ws.work[ws.ids[i]];
  return vals;
}

double SequenceSampler::kept_weights(SamplerWorkspace& ws) {
  const float* vals = gather(ws.num_kept, ws);
  const float max_logit = max_of(vals, ws.num_kept);
  float* weights = ws.weights.data();
  if (!std::isinf(max_logit)) return sum_exp_shifted(vals, ws.num_kept, max_logit, weights);
  double total = 0.0;
  for (size_t i = 0; i < ws.num_kept; ++i)
    total += weights[i] = static_cast<float>(weight(vals[i], max_logit));
  return total;
}

void SequenceSampler::fill_top_logprobs(double lse, SamplerWorkspace& ws, SampleResult* out) const {
  const size_t k = static_cast<size_t>(params_.num_logprobs);
  if (k == 0) return;
  // Reads the raw (sanitized) row in ws.work before prepare() changes it, with
  // ws.ids as scratch (prepare() refills it).
  const float* work = ws.work.data();
  select_top_k(work, static_cast<size_t>(vocab_size_), k, ws.scratch.data(), ws.ids.data());
  out->top_logprobs.reserve(k);
  for (size_t i = 0; i < k; ++i) {
    const int32_t id = ws.ids[i];
    out->top_logprobs.push_back({id, static_cast<float>(static_cast<double>(work[id]) - lse)});
  }
}

SampleResult SequenceSampler::sample(const float* logits, SamplerWorkspace& ws) {
  assert(ws.vocab_size() == vocab_size_);
  SampleResult out;
  load(logits, ws);
  // The log-normaliser costs an exp per vocabulary entry: only for logprobs.
  const double lse = params_.num_logprobs > 0 ? raw_log_sum_exp(ws) : 0.0;
  fill_top_logprobs(lse, ws, &out);

  int32_t token = prepare(ws);
  if (token < 0) {
    const double total = kept_weights(ws);
    const double u = draw() * total;
    const float* weights = ws.weights.data();
    double cumulative = 0.0;
    size_t chosen = ws.num_kept - 1;  // rounding fallback
    for (size_t i = 0; i < ws.num_kept; ++i) {
      cumulative += weights[i];
      if (u < cumulative) {
        chosen = i;
        break;
      }
    }
    token = ws.is_identity ? static_cast<int32_t>(chosen) : ws.ids[chosen];
  }
  out.token = token;
  if (params_.num_logprobs > 0) {
    out.logprob = static_cast<float>(static_cast<double>(sanitize(logits[token])) - lse);
  }
  append_output_token(token);
  return out;
}

SampleResult SequenceSampler::verify(const float* logits, int32_t draft, SamplerWorkspace& ws,
                                     bool* accepted) {
  assert(ws.vocab_size() == vocab_size_);
  SampleResult out;
  load(logits, ws);
  // The log-normaliser costs an exp per vocabulary entry: only for logprobs.
  const double lse = params_.num_logprobs > 0 ? raw_log_sum_exp(ws) : 0.0;
  fill_top_logprobs(lse, ws, &out);

  int32_t token = prepare(ws);
  if (token < 0) {
    const double total = kept_weights(ws);
    const float* weights = ws.weights.data();
    auto id_of = [&ws](size_t i) { return ws.is_identity ? static_cast<int32_t>(i) : ws.ids[i]; };
    double draft_weight = 0.0;
    size_t draft_index = ws.num_kept;
    for (size_t i = 0; i < ws.num_kept; ++i) {
      if (id_of(i) == draft) {
        draft_weight = weights[i];
        draft_index = i;
        break;
      }
    }
    if (draft_index < ws.num_kept && draw() * total < draft_weight) {
      token = draft;
    } else {
      // The residual: every kept token but the draft, renormalized.
      const double residual = total - draft_weight;
      const double u = draw() * residual;
      double cumulative = 0.0;
      size_t chosen = ws.num_kept;
      for (size_t i = 0; i < ws.num_kept; ++i) {
        if (i == draft_index || !(weights[i] > 0.0f)) continue;
        cumulative += weights[i];
        chosen = i;  // the last candidate with mass is the rounding fallback
        if (u < cumulative) break;
      }
      // Only the draft had mass (its weight rounded below the total): keep it.
      token = chosen < ws.num_kept ? id_of(chosen) : draft;
    }
  }
  *accepted = token == draft;
  out.token = token;
  if (params_.num_logprobs > 0) {
    out.logprob = static_cast<float>(static_cast<double>(sanitize(logits[token])) - lse);
  }
  append_output_token(token);
  return out;
}

std::vector<std::pair<int32_t, double>> SequenceSampler::distribution(const float* logits,
                                                                      SamplerWorkspace& ws) const {
  assert(ws.vocab_size() == vocab_size_);
  std::vector<std::pair<int32_t, double>> out;
  load(logits, ws);
  const int32_t greedy = prepare(ws);
  if (greedy >= 0) {
    out.emplace_back(greedy, 1.0);
    return out;
  }
  const double total = kept_weights(ws);
  for (size_t i = 0; i < ws.num_kept; ++i) {
    const int32_t id = ws.is_identity ? static_cast<int32_t>(i) : ws.ids[i];
    out.emplace_back(id, ws.weights[i] / total);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void apply_token_bitmask(std::span<const uint64_t> allowed, float* logits, int32_t vocab_size) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  for (int32_t base = 0; base < vocab_size; base += 64) {
    const size_t w = static_cast<size_t>(base) / 64;
    const uint64_t bits = w < allowed.size() ? allowed[w] : 0;
    if (bits == ~uint64_t{0}) continue;
    const int32_t n = std::min(64, vocab_size - base);
    for (int32_t b = 0; b < n; ++b)
      if (!((bits >> b) & 1)) logits[base + b] = kNegInf;
  }
}

}  // namespace strata
