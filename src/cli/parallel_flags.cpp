#include "cli/parallel_flags.h"

#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "engine/kv_slice_worker.h"
#include "model/model_weights.h"
#include "runtime/model_worker.h"

namespace strata::cli {

void add_parallel_flags(CLI::App* app, ParallelOptions* options) {
  app->add_option("--tensor-parallel-size,--tp", options->tensor_parallel_size,
                  "Ranks that shard every layer (heads, FFN, vocabulary); under mpirun, "
                  "-np = tensor x pipeline size")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app->add_option("--pipeline-parallel-size,--pp", options->pipeline_parallel_size,
                  "Pipeline stages (contiguous layer ranges)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app->add_flag("!--no-pipeline-micro-batches", options->pipeline_micro_batches,
                "Under pipeline parallelism, run one step at a time instead of keeping one "
                "micro-batch per stage in flight (for comparison)");
}

Result<std::unique_ptr<ProcessGroup>> start_parallel(const ParallelOptions& options) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ProcessGroup> group, ProcessGroup::create(options));
  if (group != nullptr && !group->layout().is_driver()) {
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
  }
  if (group != nullptr && group->layout().is_driver()) {
    std::fprintf(stderr, "[parallel] tensor %d x pipeline %d over %d ranks\n",
                 group->layout().tensor_parallel_size, group->layout().pipeline_parallel_size,
                 group->size());
    for (const std::string& line : group->placement_lines()) {
      std::fprintf(stderr, "[parallel] %s\n", line.c_str());
    }
  }
  return group;
}

int run_worker_rank(ProcessGroup& group, const std::string& model_path, int num_threads) {
  Result<ModelWeights> weights = ModelWeights::open(model_path, &group);
  if (!weights) {
    // A non-zero exit makes mpirun end the whole group.
    std::fprintf(stderr, "error: rank %d: %s\n", group.rank(), weights.status().message().c_str());
    return 1;
  }
  // This rank's slice of the tiered KV cache, when rank 0 opens one.
  KvSliceWorker kv_tiers(*weights);
  const auto on_kv_tier = [&kv_tiers](std::span<const uint8_t> payload, KvStorage& kv) {
    kv_tiers.handle(payload, kv);
  };
  if (Status s = run_model_worker(*weights, num_threads, on_kv_tier); !s) {
    std::fprintf(stderr, "error: rank %d: %s\n", group.rank(), s.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace strata::cli
