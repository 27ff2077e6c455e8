// Roofline: measured limits of this machine, the floors every speed figure
// is printed next to (`strata bench forward`, `make bench`).
//
// Each function runs a short dedicated loop on all of the pool's threads
// (about a quarter of a second) with the kernels' current ISA, and returns
// the best of a few repetitions. Not for hot paths; thread-compatible.
#pragma once

#include <cstddef>

#include "util/thread_pool.h"

namespace strata {

// Bytes per second streamed from memory (reads only, a buffer far larger
// than the caches), in GB/s (1e9).
double measure_read_bandwidth_gbs(ThreadPool& pool, size_t buffer_bytes = size_t{512} << 20);

// Peak fp32 fused multiply-add rate, in GFLOP/s (one FMA = 2 FLOPs).
double measure_peak_fp32_gflops(ThreadPool& pool);

// Peak int8 dot-product rate of the quantized kernels (AVX-512 VNNI
// vpdpbusd, or AVX2 vpmaddubsw + vpmaddwd), in GOP/s (one MAC = 2 OPs).
double measure_peak_int8_gops(ThreadPool& pool);

// Peak int8 rate of the AMX tile unit in the shape the AMX matmul uses
// (TDPBSSD on 16x16 int32 tiles, K = 32 per block), in GOP/s; 0 when this
// CPU/OS cannot run AMX (kernels/amx_support.h). The prefill floor on such
// a CPU is set by this, not by measure_peak_int8_gops().
double measure_peak_amx_int8_gops(ThreadPool& pool);

// All four at once: the ceilings a roofline compares each phase of a forward
// pass against (runtime/forward_profile.h). STRATA_MEM_BW_GBS, when set,
// replaces the bandwidth measurement. `quick` (a server's start-up: ~0.1 s
// in all) reads a 256 MiB buffer and runs an eighth of the compute loops;
// otherwise ~1 s (`strata bench forward`).
struct MachineCeilings {
  double read_bw_gbs = 0;    // GB/s
  double fp32_gflops = 0;    // GFLOP/s
  double int8_gops = 0;      // GOP/s, VNNI (or AVX2) dot products
  double amx_int8_gops = 0;  // GOP/s, 0 without a usable AMX
  bool known() const { return read_bw_gbs > 0 && fp32_gflops > 0; }
};
MachineCeilings measure_machine_ceilings(ThreadPool& pool, bool quick);

}  // namespace strata
