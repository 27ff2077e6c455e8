// The tiered KV cache under model parallelism, run under mpirun
// (tests/parallel/run_parallel_tests.sh):
//   mpirun -np T*P parallel_tiers --tp T --pp P MODEL.gguf DISK_DIR
// Each rank stores its own slice of every chunk in its own subdirectory of
// DISK_DIR, under keys that name the layout and the rank. Rank 0 drives
// engines over the same prompt, each with a fresh KV pool:
//   1. one process (rank 0's whole model), no tiers: the greedy reference;
//   2. the group with a disk tier: the same tokens; every rank stored files;
//   3. the group again (a restart): the prompt loads from every rank's disk
//      slice (the prefix cache hits it), the same tokens;
//   4. one rank's slices gone: nothing loads (a block is usable only when
//      every rank holds its slice), the same tokens;
//   5. one process on the same directory: no layout's slices load into it.
// Exit 0 on success; every other rank runs the worker loop (with its slice).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_core.h"
#include "engine/kv_slice_worker.h"
#include "group_test_main.h"
#include "model/model_weights.h"
#include "parallel/process_group.h"
#include "runtime/model_worker.h"
#include "tokenizer/tokenizer.h"

namespace strata {
namespace {

constexpr int32_t kChunkTokens = 16;
constexpr int32_t kPromptTokens = 53;  // three whole chunks load (never the last token)

int fail(const std::string& what) {
  std::fprintf(stderr, "parallel_tiers: FAIL: %s\n", what.c_str());
  return 1;
}

struct Run {
  std::vector<int32_t> tokens;
  int64_t prefix_hit_tokens = 0;
};

Result<Run> run_prompt(const ModelWeights& weights, const Tokenizer& tokenizer,
                       const std::string& disk_dir) {
  EngineOptions options;
  options.block_size = 8;
  options.kv_cache_memory_bytes = size_t{4} << 20;
  options.max_model_len = 128;
  options.allow_long_max_model_len = true;
  options.num_threads = 1;
  options.kv_tiers.chunk_tokens = kChunkTokens;
  options.kv_tiers.disk_dir = disk_dir;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<EngineCore> core,
                          EngineCore::create(weights, tokenizer, options));
  GenerationRequest r;
  const int64_t vocab = weights.config().vocab_size;
  for (int i = 0; i < kPromptTokens; ++i)
    r.prompt_tokens.push_back(static_cast<int32_t>((i * 7919 + 13) % (vocab - 3) + 3));
  r.max_tokens = 8;
  r.ignore_eos = true;
  r.sampling.temperature = 0.0f;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<RequestStream> stream, core->add_request(r));
  Run out;
  for (int step = 0; core->has_unfinished_requests(); ++step) {
    if (step > 1000) return internal_error("the request never finished");
    if (core->is_only_loading()) {
      // The disk lookup runs on the loader thread.
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    core->step();
    for (const TokenEvent& e : stream->drain()) {
      out.tokens.insert(out.tokens.end(), e.token_ids.begin(), e.token_ids.end());
      if (e.is_final && e.finish_reason == FinishReason::kError) {
        return internal_error("the request failed: " + e.error_message);
      }
    }
  }
  out.prefix_hit_tokens = core->scheduler().stats().prefix_hit_tokens;
  core->flush_kv_connector();  // every rank's stores are on disk
  return out;
}

size_t count_files(const std::filesystem::path& dir) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file()) ++n;
  }
  return n;
}

int run(int argc, char** argv) {
  const test::GroupArgs args = test::parse_group_args(argc, argv);
  if (args.paths.size() != 2) return fail("usage: parallel_tiers --tp T --pp P MODEL DISK_DIR");
  const std::string& model = args.paths[0];
  const std::filesystem::path dir = args.paths[1];
  Result<test::StartedGroup> started = test::start_group(args.options, model);
  if (!started) return fail(started.status().message());
  ProcessGroup& g = *started->group;
  ModelWeights* shard = &started->shard;
  if (!g.layout().is_driver()) {
    KvSliceWorker slice(*shard);
    Status s = run_model_worker(
        *shard, 1, [&slice](std::span<const uint8_t> p, KvStorage& kv) { slice.handle(p, kv); });
    return s ? 0 : fail(s.message());
  }
  Result<ModelWeights> whole = ModelWeights::open(model);
  if (!whole) return fail(whole.status().message());
  Result<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::from_gguf(whole->file());
  if (!tokenizer) return fail(tokenizer.status().message());
  const Tokenizer& tok = **tokenizer;
  const std::string layout = g.layout().describe();
  const auto rank_dir = [&](int rank) {
    ParallelLayout l = g.layout();
    l.rank = rank;
    return dir / l.key();
  };

  Result<Run> want = run_prompt(*whole, tok, "");
  if (!want) return fail("one process: " + want.status().message());
  Result<Run> first = run_prompt(*shard, tok, dir.string());
  if (!first) return fail(layout + ", first run: " + first.status().message());
  if (first->tokens != want->tokens)
    return fail(layout + ": greedy tokens differ from one process");
  for (int r = 0; r < g.size(); ++r) {
    if (count_files(rank_dir(r)) < 3) {
      return fail(layout + ": rank " + std::to_string(r) + " stored fewer than 3 chunks in " +
                  rank_dir(r).string());
    }
  }
  Result<Run> again = run_prompt(*shard, tok, dir.string());
  if (!again) return fail(layout + ", second run: " + again.status().message());
  if (again->tokens != want->tokens) return fail(layout + ": tokens differ after loading");
  if (again->prefix_hit_tokens < 3 * kChunkTokens) {
    return fail(layout + ": the restart loaded " + std::to_string(again->prefix_hit_tokens) +
                " prompt tokens from the disk tier, expected 48");
  }
  // The last rank loses its slices: no rank may use its own.
  std::filesystem::remove_all(rank_dir(g.size() - 1));
  Result<Run> partial = run_prompt(*shard, tok, dir.string());
  if (!partial) return fail(layout + ", partial run: " + partial.status().message());
  if (partial->tokens != want->tokens) return fail(layout + ": tokens differ, one slice missing");
  if (partial->prefix_hit_tokens != 0) {
    return fail(layout + ": loaded " + std::to_string(partial->prefix_hit_tokens) +
                " tokens while rank " + std::to_string(g.size() - 1) + " had no slices");
  }
  Result<Run> alone = run_prompt(*whole, tok, dir.string());
  if (!alone) return fail("one process on the same directory: " + alone.status().message());
  if (alone->tokens != want->tokens) return fail("one process with tiers: tokens differ");
  if (alone->prefix_hit_tokens != 0) {
    return fail("one process loaded " + std::to_string(alone->prefix_hit_tokens) +
                " tokens from chunks of " + layout);
  }
  std::printf("parallel_tiers: %s under %s: %lld prompt tokens loaded from every rank's slice\n",
              model.c_str(), layout.c_str(), static_cast<long long>(again->prefix_hit_tokens));
  return 0;
}

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  return strata::run(argc, argv);
}
