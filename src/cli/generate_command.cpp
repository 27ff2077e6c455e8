// `strata generate`: stream a continuation of a prompt, then report prefill
// and decode speed. With --speculative-config the prompt runs through the
// serving engine (drafts verified in batched steps) instead of a bare
// sequence.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/parallel_flags.h"
#include "cli/single_sequence.h"
#include "engine/engine_core.h"
#include "model/model_weights.h"
#include "sampler/sampler.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace strata::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// With speculative decoding: one request through the serving engine (whose
// scheduler drafts and verifies), streamed as its events arrive.
int generate_with_engine(const GenerateOptions& opt, const ModelWeights& weights,
                         const Tokenizer& tok, std::vector<int32_t> prompt, int64_t ctx,
                         const SamplingParams& params) {
  EngineOptions options;
  Result<SpeculativeConfig> spec = SpeculativeConfig::parse(opt.speculative_config);
  if (!spec) return fail(spec.status());
  options.speculative = *spec;
  options.num_threads = opt.num_threads;
  options.max_model_len = ctx;
  options.allow_long_max_model_len = true;  // --ctx-size decides, as without the engine
  options.max_num_seqs = 1;
  Result<std::unique_ptr<EngineCore>> core = EngineCore::create(weights, tok, options);
  if (!core) return fail(core.status());
  GenerationRequest request;
  const size_t num_prompt = prompt.size();
  request.prompt_tokens = std::move(prompt);
  request.sampling = params;
  request.max_tokens = static_cast<int32_t>(
      std::min<int64_t>(opt.max_tokens, ctx - static_cast<int64_t>(num_prompt)));
  request.ignore_eos = opt.ignore_eos;
  Result<std::shared_ptr<RequestStream>> stream = (*core)->add_request(std::move(request));
  if (!stream) return fail(stream.status());

  std::fputs(opt.prompt.c_str(), stdout);
  std::fflush(stdout);
  const auto t0 = Clock::now();
  double first_token_s = -1.0;
  int64_t num_generated = 0;
  const char* finish = "length";
  int64_t num_steps = 0;
  while ((*core)->has_unfinished_requests()) {
    (*core)->step();
    ++num_steps;
    for (const TokenEvent& e : (*stream)->drain()) {
      if (!e.token_ids.empty() && first_token_s < 0) first_token_s = seconds_since(t0);
      num_generated += static_cast<int64_t>(e.token_ids.size());
      std::fwrite(e.text.data(), 1, e.text.size(), stdout);
      if (e.is_final) {
        finish = finish_reason_name(e.finish_reason);
        if (e.finish_reason == FinishReason::kError) {
          return fail(internal_error("generation failed: " + e.error_message));
        }
      }
    }
    std::fflush(stdout);
  }
  std::fputc('\n', stdout);
  const double total_s = seconds_since(t0);
  const double decode_s = std::max(total_s - std::max(first_token_s, 0.0), 1e-9);
  const GateStats& g = (*core)->speculation_gate()->stats();
  std::fprintf(stderr,
               "\n[strata] prefill: %zu tokens in %.3f s | decode: %lld tokens in %.3f s (%.1f "
               "tok/s) | finish: %s | speculative: %lld of %lld drafts accepted, %.2f tokens "
               "per step, %lld steps\n",
               num_prompt, std::max(first_token_s, 0.0), static_cast<long long>(num_generated),
               decode_s, std::max<int64_t>(0, num_generated - 1) / decode_s, finish,
               static_cast<long long>(g.num_accepted_tokens),
               static_cast<long long>(g.num_draft_tokens), g.tokens_per_step,
               static_cast<long long>(num_steps));
  return 0;
}

}  // namespace

int run_generate(const GenerateOptions& opt) {
  const std::string path = opt.model_path.empty() ? default_model_path() : opt.model_path;
  Result<std::unique_ptr<ProcessGroup>> group = start_parallel(opt.parallel);
  if (!group) return fail(group.status());
  if (*group && !(*group)->layout().is_driver()) {
    return run_worker_rank(**group, path, opt.num_threads);
  }
  Result<ModelWeights> weights = ModelWeights::open(path, group->get());
  if (!weights) return fail(weights.status());
  const ModelConfig& config = weights->config();
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_gguf(weights->file());
  if (!tokenizer) return fail(tokenizer.status());
  const Tokenizer& tok = **tokenizer;

  const std::vector<int32_t> prompt = tok.encode(opt.prompt, /*add_special=*/true,
                                                 /*parse_special=*/true);
  if (prompt.empty()) return fail(invalid_argument("the prompt encodes to no tokens"));
  const int64_t ctx = opt.context_tokens > 0 ? opt.context_tokens : config.context_length;
  if (static_cast<int64_t>(prompt.size()) >= ctx) {
    return fail(out_of_range("the prompt is " + std::to_string(prompt.size()) +
                             " tokens but the context holds " + std::to_string(ctx) +
                             " (shorten the prompt or raise --ctx-size; the model was trained "
                             "for " +
                             std::to_string(config.context_length) + ")"));
  }

  SamplingParams params;
  params.temperature = opt.temperature;
  params.top_k = opt.top_k;
  params.top_p = opt.top_p;
  params.min_p = opt.min_p;
  params.repetition_penalty = opt.repetition_penalty;
  params.seed = opt.seed;
  if (!opt.speculative_config.empty()) {
    return generate_with_engine(opt, *weights, tok, prompt, ctx, params);
  }

  Result<std::unique_ptr<SingleSequence>> seq =
      SingleSequence::create(*weights, ctx, opt.num_threads, /*max_batch_tokens=*/512);
  if (!seq) return fail(seq.status());
  Result<SequenceSampler> sampler =
      SequenceSampler::create(params, static_cast<int32_t>(config.vocab_size), prompt);
  if (!sampler) return fail(sampler.status());

  std::fputs(opt.prompt.c_str(), stdout);
  std::fflush(stdout);

  const auto t_prefill = Clock::now();
  if (Status s = (*seq)->append(prompt); !s) return fail(s);
  const double prefill_s = seconds_since(t_prefill);

  SamplerWorkspace workspace(static_cast<int32_t>(config.vocab_size));
  IncrementalDetokenizer detok(tok);
  const int64_t budget =
      std::min<int64_t>(opt.max_tokens, ctx - static_cast<int64_t>(prompt.size()));
  int64_t num_generated = 0;
  const char* finish = "length";
  const auto t_decode = Clock::now();
  for (int64_t i = 0; i < budget; ++i) {
    const SampleResult r = sampler->sample((*seq)->logits().data(), workspace);
    ++num_generated;
    if (!opt.ignore_eos && tok.is_eog(r.token)) {
      finish = "stop";
      break;
    }
    const std::string text = detok.push(r.token);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (i + 1 == budget) break;
    const int32_t next = r.token;
    if (Status s = (*seq)->append(std::span<const int32_t>(&next, 1)); !s) return fail(s);
  }
  const std::string rest = detok.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::fputc('\n', stdout);
  const double decode_s = seconds_since(t_decode);

  std::fprintf(stderr,
               "\n[strata] prefill: %zu tokens in %.3f s (%.1f tok/s) | decode: %lld tokens in "
               "%.3f s (%.1f tok/s) | finish: %s\n",
               prompt.size(), prefill_s, prompt.size() / std::max(prefill_s, 1e-9),
               static_cast<long long>(num_generated), decode_s,
               num_generated / std::max(decode_s, 1e-9), finish);
  return 0;
}

int run_tokenize(const TokenizeOptions& opt) {
  const std::string path = opt.model_path.empty() ? default_model_path() : opt.model_path;
  Result<GgufFile> file = GgufFile::open(path);
  if (!file) return fail(file.status());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_gguf(*file);
  if (!tokenizer) return fail(tokenizer.status());
  const std::vector<int32_t> ids =
      (*tokenizer)->encode(opt.text, opt.add_special, opt.parse_special);
  if (opt.ids_only) {
    std::string line = "[";
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) line += ", ";
      line += std::to_string(ids[i]);
    }
    std::printf("%s]\n", line.c_str());
    return 0;
  }
  for (int32_t id : ids) {
    std::string piece = (*tokenizer)->token_to_piece(id);
    std::string shown;
    for (unsigned char c : piece) {
      if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\x%02x", c);
        shown += buf;
      } else {
        shown += static_cast<char>(c);
      }
    }
    std::printf("%8d  '%s'\n", id, shown.c_str());
  }
  std::printf("%zu tokens\n", ids.size());
  return 0;
}

}  // namespace strata::cli
