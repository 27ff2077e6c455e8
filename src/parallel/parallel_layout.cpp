#include "parallel/parallel_layout.h"

#include <algorithm>

namespace strata {

void ParallelLayout::layer_range(int num_layers, int* begin, int* end) const {
  const int p = pipeline_parallel_size;
  const int base = num_layers / p;
  const int extra = num_layers % p;
  const int s = pp_rank();
  *begin = s * base + std::min(s, extra);
  *end = *begin + base + (s < extra ? 1 : 0);
}

void ParallelLayout::shard_range(int64_t n, int64_t* begin, int64_t* end) const {
  const int64_t t = tensor_parallel_size;
  const int64_t per = (n + t - 1) / t;
  *begin = std::min<int64_t>(n, per * tp_rank());
  *end = std::min<int64_t>(n, *begin + per);
}

Status ParallelLayout::validate(int launched_world_size) const {
  constexpr int kMaxSize = 64;
  if (tensor_parallel_size < 1 || tensor_parallel_size > kMaxSize) {
    return invalid_argument("--tensor-parallel-size " + std::to_string(tensor_parallel_size) +
                            " is out of range [1, " + std::to_string(kMaxSize) + "]");
  }
  if (pipeline_parallel_size < 1 || pipeline_parallel_size > kMaxSize) {
    return invalid_argument("--pipeline-parallel-size " + std::to_string(pipeline_parallel_size) +
                            " is out of range [1, " + std::to_string(kMaxSize) + "]");
  }
  if (launched_world_size != world_size()) {
    return invalid_argument(
        "--tensor-parallel-size " + std::to_string(tensor_parallel_size) +
        " x --pipeline-parallel-size " + std::to_string(pipeline_parallel_size) + " = " +
        std::to_string(world_size()) + " ranks, but " +
        (launched_world_size == 1 ? std::string("this process was not started by mpirun")
                                  : "mpirun started " + std::to_string(launched_world_size)) +
        " (run: mpirun -np " + std::to_string(world_size()) + " strata ...)");
  }
  if (rank < 0 || rank >= world_size()) {
    return invalid_argument("parallel: rank " + std::to_string(rank) + " is out of range");
  }
  return Status::ok();
}

std::string ParallelLayout::describe() const {
  return "tp " + std::to_string(tensor_parallel_size) + " x pp " +
         std::to_string(pipeline_parallel_size) + ", rank " + std::to_string(rank) + " (shard " +
         std::to_string(tp_rank()) + ", stage " + std::to_string(pp_rank()) + ")";
}

std::string ParallelLayout::key() const {
  return "tp" + std::to_string(tensor_parallel_size) + ".pp" +
         std::to_string(pipeline_parallel_size) + ".r" + std::to_string(rank);
}

}  // namespace strata
