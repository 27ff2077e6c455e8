// What the mpirun-launched test programs (parallel_parity, parallel_tiers,
// parallel_pipeline) share: their command line (--tp T / --pp P, or vLLM's
// long names, then positional paths) and the start of the group with every
// rank's shard of the model. Each program then runs its own checks on rank 0
// and the worker loop on the other ranks.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "model/model_weights.h"
#include "parallel/process_group.h"
#include "util/status.h"

namespace strata::test {

struct GroupArgs {
  ParallelOptions options;
  std::vector<std::string> paths;  // the positional arguments, in order
};

inline GroupArgs parse_group_args(int argc, char** argv) {
  GroupArgs args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--tp" || a == "--tensor-parallel-size") && i + 1 < argc) {
      args.options.tensor_parallel_size = std::atoi(argv[++i]);
    } else if ((a == "--pp" || a == "--pipeline-parallel-size") && i + 1 < argc) {
      args.options.pipeline_parallel_size = std::atoi(argv[++i]);
    } else {
      args.paths.push_back(a);
    }
  }
  return args;
}

// The group (MPI started) and this rank's shard of `model`.
struct StartedGroup {
  std::unique_ptr<ProcessGroup> group;
  ModelWeights shard;
};

inline Result<StartedGroup> start_group(const ParallelOptions& options, const std::string& model) {
  Result<std::unique_ptr<ProcessGroup>> group = ProcessGroup::create(options);
  if (!group) return group.status();
  if (*group == nullptr) return invalid_argument("needs mpirun and a parallel size > 1");
  Result<ModelWeights> shard = ModelWeights::open(model, group->get());
  if (!shard) return shard.status();
  return StartedGroup{std::move(*group), std::move(*shard)};
}

}  // namespace strata::test
