// `strata generate`: stream a continuation of a prompt, then report prefill
// and decode speed.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/parallel_flags.h"
#include "cli/single_sequence.h"
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

int fail(const Status& s) {
  std::fprintf(stderr, "error: %s\n", s.message().c_str());
  return 1;
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

  Result<std::unique_ptr<SingleSequence>> seq =
      SingleSequence::create(*weights, ctx, opt.num_threads, /*max_batch_tokens=*/512);
  if (!seq) return fail(seq.status());

  SamplingParams params;
  params.temperature = opt.temperature;
  params.top_k = opt.top_k;
  params.top_p = opt.top_p;
  params.min_p = opt.min_p;
  params.repetition_penalty = opt.repetition_penalty;
  params.seed = opt.seed;
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
