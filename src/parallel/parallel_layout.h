// ParallelLayout: how a group of ranks splits one model. T = tensor-parallel
// size (every layer sharded T ways: heads, FFN columns, vocabulary), P =
// pipeline-parallel size (contiguous layer ranges, one per stage); the group
// has T x P ranks, rank r = pp_rank * T + tp_rank, so the T ranks of a stage
// are neighbours (one host, or one socket, per stage). Rank 0 (stage 0,
// shard 0) drives: it runs the scheduler, the samplers and the server.
// A plain value; thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "util/status.h"

namespace strata {

struct ParallelLayout {
  int tensor_parallel_size = 1;    // T (--tensor-parallel-size)
  int pipeline_parallel_size = 1;  // P (--pipeline-parallel-size)
  int rank = 0;                    // 0 <= rank < T x P

  int world_size() const { return tensor_parallel_size * pipeline_parallel_size; }
  int tp_rank() const { return rank % tensor_parallel_size; }
  int pp_rank() const { return rank / tensor_parallel_size; }
  bool is_parallel() const { return world_size() > 1; }
  bool is_driver() const { return rank == 0; }
  bool is_first_stage() const { return pp_rank() == 0; }
  bool is_last_stage() const { return pp_rank() == pipeline_parallel_size - 1; }
  // The global rank of shard `tp` in stage `pp`.
  int rank_of(int pp, int tp) const { return pp * tensor_parallel_size + tp; }

  // This stage's layers [*begin, *end) of `num_layers` (contiguous, the
  // first stages take the remainder).
  void layer_range(int num_layers, int* begin, int* end) const;
  // This shard's part [*begin, *end) of `n` items (heads, columns, vocab).
  void shard_range(int64_t n, int64_t* begin, int64_t* end) const;

  // Sizes in range; `world_size` (what the launcher started) equals T x P.
  // The message names both flags.
  Status validate(int launched_world_size) const;
  // "tp 2 x pp 1, rank 0 (shard 0, stage 0)"; the tiered cache's key uses
  // key() instead: "tp2.pp1.r0".
  std::string describe() const;
  std::string key() const;
};

}  // namespace strata
