// Placement: which CPUs and memory one rank of a model-parallel group uses,
// decided with hwloc once at start-up, before any thread exists (so the
// kernel thread pool and every allocation inherit it).
//
// On a host with several NUMA domains, the ranks on that host take the
// domains round robin by their local rank (OMPI_COMM_WORLD_LOCAL_RANK):
// the process's CPUs and its memory policy are bound to that domain, so
// each rank's thread pool reads weights and KV from its own socket's DRAM
// (tensor parallelism across sockets then pays only for the all-reduce).
// With one domain nothing is bound: whatever binding the launcher gave
// stays (OpenMPI binds each of 2 ranks to a core by default; --bind-to
// none leaves the scheduler free). --threads is per rank either way.
#pragma once

#include <string>

namespace strata {

struct Placement {
  int num_numa_domains = 1;  // on this host
  int numa_domain = -1;      // the one bound to; -1 = not bound
  std::string cpus;          // the CPUs this process may run on, "0-7,16-23"
  std::string description;   // one line for the start-up log
};

// Binds this process as above (local_rank: its index among the ranks on
// this host). Never fails: a host hwloc cannot read is left unbound, and
// the description says why.
Placement place_process(int local_rank);

}  // namespace strata
