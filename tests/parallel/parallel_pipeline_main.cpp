// Pipeline micro-batches, run under mpirun
// (tests/parallel/run_parallel_tests.sh):
//   mpirun -np T*P parallel_pipeline --tp T --pp P MODEL.gguf
// Rank 0 runs several concurrent requests, greedy and seeded sampling
// (different prompt lengths, so prefill chunks and decodes mix) through one process's engine (its
// whole model) and through the group's, which keeps P plans in flight:
// every request's tokens must be the same, and the group's engine must have
// launched plans while another was in flight (the micro-batches really
// overlapped). Exit 0 on success; every other rank runs the worker loop.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_core.h"
#include "group_test_main.h"
#include "model/model_weights.h"
#include "parallel/process_group.h"
#include "runtime/model_worker.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

constexpr int kNumRequests = 6;

int fail(const std::string& what) {
  std::fprintf(stderr, "parallel_pipeline: FAIL: %s\n", what.c_str());
  return 1;
}

struct Run {
  std::vector<std::vector<int32_t>> tokens;  // per request
  int32_t depth = 0;
  int64_t num_overlapped = 0;
};

Result<Run> run_requests(const ModelWeights& weights, const Tokenizer& tokenizer) {
  EngineOptions options;
  options.block_size = 8;
  options.kv_cache_memory_bytes = size_t{8} << 20;
  options.max_model_len = 128;
  options.allow_long_max_model_len = true;
  options.num_threads = 1;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core,
                          EngineCore::create(weights, tokenizer, options));
  const int64_t vocab = weights.config().vocab_size;
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int q = 0; q < kNumRequests; ++q) {
    GenerationRequest r;
    for (int i = 0; i < 5 + 7 * q; ++i)
      r.prompt_tokens.push_back(
          static_cast<int32_t>((i * 7919 + q * 104729 + 13) % (vocab - 3) + 3));
    r.max_tokens = 10 + q;
    r.ignore_eos = true;
    // Greedy and seeded sampling: a sampler drawn twice for one step (a
    // request scheduled again while in flight) would change the latter.
    r.sampling.temperature = q % 2 == 0 ? 0.0f : 1.0f;
    r.sampling.seed = 1000 + static_cast<uint64_t>(q);
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RequestStream> s, core->add_request(r));
    streams.push_back(std::move(s));
  }
  Run out;
  out.tokens.resize(kNumRequests);
  for (int step = 0; core->has_unfinished_requests(); ++step) {
    if (step > 2000) return internal_error("the requests never finished");
    core->step();
    for (int q = 0; q < kNumRequests; ++q) {
      for (const TokenEvent& e : streams[q]->drain()) {
        out.tokens[q].insert(out.tokens[q].end(), e.token_ids.begin(), e.token_ids.end());
        if (e.is_final && e.finish_reason == FinishReason::kError) {
          return internal_error("request " + std::to_string(q) + " failed: " + e.error_message);
        }
      }
    }
  }
  out.depth = core->pipeline_depth();
  out.num_overlapped = core->num_overlapped_launches();
  return out;
}

int run(int argc, char** argv) {
  const test::GroupArgs args = test::parse_group_args(argc, argv);
  if (args.paths.size() != 1) return fail("usage: parallel_pipeline --tp T --pp P MODEL");
  const std::string& model = args.paths[0];
  Result<test::StartedGroup> started = test::start_group(args.options, model);
  if (!started) return fail(started.status().message());
  ProcessGroup& g = *started->group;
  ModelWeights* shard = &started->shard;
  if (!g.layout().is_driver()) {
    Status s = run_model_worker(*shard, 1);
    return s ? 0 : fail(s.message());
  }
  Result<ModelWeights> whole = ModelWeights::open(model);
  if (!whole) return fail(whole.status().message());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_gguf(whole->file());
  if (!tokenizer) return fail(tokenizer.status().message());
  const std::string layout = g.layout().describe();

  Result<Run> want = run_requests(*whole, **tokenizer);
  if (!want) return fail("one process: " + want.status().message());
  Result<Run> have = run_requests(*shard, **tokenizer);
  if (!have) return fail(layout + ": " + have.status().message());
  for (int q = 0; q < kNumRequests; ++q) {
    if (have->tokens[q] != want->tokens[q]) {
      return fail(layout + ": request " + std::to_string(q) +
                  "'s greedy tokens differ from one "
                  "process's");
    }
  }
  if (have->depth != args.options.pipeline_parallel_size) {
    return fail(layout + ": " + std::to_string(have->depth) + " plans in flight, expected " +
                std::to_string(args.options.pipeline_parallel_size));
  }
  if (args.options.pipeline_parallel_size > 1 && have->num_overlapped == 0) {
    return fail(layout + ": no plan was launched while another was in flight");
  }
  std::printf(
      "parallel_pipeline: %s under %s: %d requests (greedy and sampled) identical, %lld plans "
      "launched while "
      "another was in flight\n",
      model.c_str(), layout.c_str(), kNumRequests, static_cast<long long>(have->num_overlapped));
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  return strata::run(argc, argv);
}
