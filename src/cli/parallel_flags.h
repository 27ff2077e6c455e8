// Model-parallel flags and start-up shared by `serve`, `generate` and
// `bench throughput`: --tensor-parallel-size and --pipeline-parallel-size
// (vLLM's names). start_parallel() creates the ProcessGroup (null without
// mpirun and with both sizes 1: nothing changes then); a rank other than 0
// loads its shard and runs the worker loop instead of the command
// (run_worker_rank), so every line a command prints comes from rank 0 only.
#pragma once

#include <memory>
#include <string>

#include "parallel/process_group.h"
#include "util/status.h"

namespace CLI {
class App;
}

namespace strata::cli {

void add_parallel_flags(CLI::App* app, ParallelOptions* options);

// The group (null: one process); rank 0 prints the layout and every rank's
// placement. Workers ignore SIGTERM/SIGINT from here on:
// mpirun forwards them to every rank, and a worker leaves when rank 0 tells
// it to (after its drain), not before.
Result<std::unique_ptr<ProcessGroup>> start_parallel(const ParallelOptions& options);

// A worker rank's whole life: load the shard of `model_path`, serve rank 0's
// steps (and mirror the tiered KV cache's loads and saves on this rank's
// slice), return the exit code.
int run_worker_rank(ProcessGroup& group, const std::string& model_path, int num_threads);

}  // namespace strata::cli
