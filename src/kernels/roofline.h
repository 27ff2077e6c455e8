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

}  // namespace strata
