// ProcessGroup: the MPI ranks that run one model together, and every message
// they exchange: rank 0's control messages (the step's forward batch, stop),
// the tensor-parallel all-reduce and gathers, and the pipeline's activations.
//
// MPI is initialised only when it is needed: when this process was started
// by mpirun (OMPI_COMM_WORLD_SIZE / PMIX_SIZE / PMI_SIZE in the environment
// says more than one rank) or when a parallel size > 1 is asked for; without
// either, create() returns null and nothing in the process touches MPI.
//
// Faults never hang the group. Every wait polls non-blocking requests with a
// deadline (ParallelOptions::collective_timeout_s), a heartbeat thread
// exchanges a beat with every peer every 200 ms on its own communicator, and
// MPI errors come back as codes (MPI_ERRORS_RETURN), not aborts. Whichever
// notices first - a missed heartbeat, an expired wait, an MPI error - prints
// one line naming the rank ("strata: rank 1 (pid 4242 on vm) stopped
// responding: ..."), runs the fault hook (rank 0's server turns /health and
// new requests into 503s), and exits the process with kExitGroupFault after
// a short grace; the other ranks notice the same way (or mpirun ends them).
// A failed collective leaves the group's state unknowable, so collectives
// do not return errors: they succeed or end the process. On rank 0 they
// first throw GroupFailure on the calling (engine) thread while the process
// winds down, so the runner can fail the step's requests (503) instead of
// leaving their clients waiting for an exit.
//
// Reductions are deterministic: an all-reduce gathers every shard's partial
// sums and adds them in rank order on every rank, so all ranks hold the same
// bits whatever the timing.
//
// Placement: before MPI starts its threads, each rank binds itself to a
// NUMA domain of its host when there are several (parallel/placement.h).
//
// Thread-safety: the collectives and messages are for one thread (the
// engine thread on rank 0, the worker loop elsewhere); the heartbeat runs
// on its own thread (MPI_THREAD_MULTIPLE).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "parallel/parallel_layout.h"
#include "parallel/placement.h"
#include "util/status.h"

namespace strata {

struct ParallelOptions {
  int tensor_parallel_size = 1;    // --tensor-parallel-size
  int pipeline_parallel_size = 1;  // --pipeline-parallel-size
  // A peer whose heartbeat is this late is dead (the group ends).
  double heartbeat_timeout_s = 3.0;
  // The longest any one exchange inside a step may wait for a peer that
  // still beats (a wedged rank); long enough for the slowest legitimate
  // step.
  double collective_timeout_s = 120.0;
  // How long the process lingers after reporting a fault before it exits,
  // so rank 0's server can answer 503 to what arrives meanwhile.
  double fault_grace_s = 0.5;
  // Rank 0's engine keeps P plans in flight under pipeline parallelism
  // (engine/engine_core.h); false (--no-pipeline-micro-batches): one plan
  // at a time, each stage idle while the others run (for comparison).
  bool pipeline_micro_batches = true;
};

// Thrown by rank 0's collectives once the group has failed (see above).
class GroupFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The exit status of a rank that ended because its group failed.
inline constexpr int kExitGroupFault = 3;

// Rank 0's control messages.
enum class ControlKind : int32_t {
  kHello = 1,    // the runner's sizes, before the first step
  kForward = 2,  // one forward batch
  kStop = 3,     // every worker returns
  // A message for the workers' half of the tiered KV cache (each rank keeps
  // its own slice: engine/kv_slice_worker.h); in order with the steps, so a
  // load is written before the step that reads it, a save reads the blocks
  // as the step that computed them left them.
  kKvTier = 4,
};

struct ControlMessage {
  ControlKind kind = ControlKind::kStop;
  std::vector<uint8_t> payload;
};

class ProcessGroup {
 public:
  // The number of ranks the launcher started (1 when not under mpirun).
  static int launched_world_size();

  // Null when no parallelism is asked for and no launcher started several
  // ranks. Otherwise initialises MPI and checks that mpirun's -np equals
  // T x P (one line naming both flags when not).
  static Result<std::unique_ptr<ProcessGroup>> create(const ParallelOptions& options);
  // Rank 0 tells the workers to stop (if it has not), then MPI_Finalize.
  ~ProcessGroup();

  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  const ParallelLayout& layout() const { return layout_; }
  int rank() const { return layout_.rank; }
  int size() const { return layout_.world_size(); }
  const ParallelOptions& options() const { return options_; }

  // Called once, on the fault path, before the process exits (rank 0's
  // server: begin_drain, so clients get 503 instead of silence).
  // Thread-safe; null clears it (before what it captures goes away).
  void set_fault_hook(std::function<void()> hook);

  // Rank 0: sends `message` to every other rank.
  void broadcast_control(ControlKind kind, const std::vector<uint8_t>& payload);
  // Other ranks: the next control message from rank 0 (waits as long as it
  // takes: an idle group only beats).
  ControlMessage receive_control();

  // Sums data[n] over this stage's T shards, in rank order; every shard
  // ends with the same bits.
  void all_reduce_sum(float* data, int64_t n);
  // Point to point (pipeline activations, logits): blocking from the
  // caller's view, polled with the deadline.
  void send(int dst_rank, const void* data, size_t bytes, const char* what);
  void recv(int src_rank, void* data, size_t bytes, const char* what);
  // Non-blocking send; wait_sends() before the buffer is reused.
  void isend(int dst_rank, const void* data, size_t bytes, const char* what);
  void wait_sends();

  // Seconds spent inside collectives and point-to-point waits since the
  // last call (the benchmark's "communication per step").
  double take_comm_seconds();

  // Ends the group: one line naming the culprit, the fault hook, exit.
  [[noreturn]] void fail(const std::string& line);
  // A fault seen by a collective: on rank 0, fail() on another thread and
  // throw GroupFailure here; elsewhere fail().
  [[noreturn]] void fault(const std::string& line);
  bool is_failing() const { return failing_.load(); }

  // "rank 1 (pid 4242 on host)".
  std::string describe_rank(int rank) const;
  // One line per rank: its host, pid and placement (printed by rank 0 at
  // start-up).
  std::vector<std::string> placement_lines() const;

 private:
  struct Peer {
    int pid = 0;
    std::string host;
    std::string placement;  // Placement::description
  };
  struct Mpi;  // the communicators and pending requests (mpi.h stays out of this header)

  ProcessGroup(const ParallelOptions& options, ParallelLayout layout);
  Status init_peers(const Placement& placement);
  void heartbeat_loop();

  ParallelOptions options_;
  ParallelLayout layout_;
  std::vector<Peer> peers_;
  std::unique_ptr<Mpi> mpi_;
  std::mutex hook_mutex_;
  std::function<void()> fault_hook_;  // guarded by hook_mutex_
  std::atomic<bool> stopping_{false};
  std::atomic<bool> failing_{false};
  std::thread heartbeat_;
  std::atomic<bool> stop_sent_{false};  // rank 0 sent, or this worker received, kStop
  std::vector<float> reduce_scratch_;   // [T][n] every shard's partial sums
  double comm_seconds_ = 0.0;
};

}  // namespace strata
