#include "parallel/placement.h"

#include <hwloc.h>

#include <algorithm>
#include <cstdlib>

namespace strata {
namespace {

std::string cpuset_text(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0 || text == nullptr) return "?";
  std::string s(text);
  std::free(text);
  return s;
}

}  // namespace

Placement place_process(int local_rank) {
  Placement p;
  hwloc_topology_t topo = nullptr;
  if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0) {
    if (topo != nullptr) hwloc_topology_destroy(topo);
    p.description = "not bound (hwloc cannot read this host's topology)";
    return p;
  }
  p.num_numa_domains = std::max(1, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
  hwloc_bitmap_t current = hwloc_bitmap_alloc();
  if (p.num_numa_domains > 1) {
    p.numa_domain = local_rank % p.num_numa_domains;
    hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, p.numa_domain);
    const bool cpu_ok = node != nullptr && node->cpuset != nullptr &&
                        hwloc_set_cpubind(topo, node->cpuset, HWLOC_CPUBIND_PROCESS) == 0;
    const bool mem_ok = node != nullptr && node->nodeset != nullptr &&
                        hwloc_set_membind(topo, node->nodeset, HWLOC_MEMBIND_BIND,
                                          HWLOC_MEMBIND_PROCESS | HWLOC_MEMBIND_BYNODESET) == 0;
    if (!cpu_ok) p.numa_domain = -1;
    p.description = cpu_ok ? "bound to NUMA domain " + std::to_string(p.numa_domain) + " of " +
                                 std::to_string(p.num_numa_domains) +
                                 (mem_ok ? " (CPUs and memory)" : " (CPUs; memory binding refused)")
                           : "not bound (hwloc refused the CPU binding)";
  } else {
    p.description = "1 NUMA domain: not bound";
  }
  if (hwloc_get_cpubind(topo, current, HWLOC_CPUBIND_PROCESS) == 0) p.cpus = cpuset_text(current);
  p.description += ", CPUs " + (p.cpus.empty() ? std::string("?") : p.cpus);
  hwloc_bitmap_free(current);
  hwloc_topology_destroy(topo);
  return p;
}

}  // namespace strata
