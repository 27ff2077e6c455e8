#include "kernels/roofline.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/amx_support.h"
#include "kernels/dispatch.h"
#include "kernels/matmul_amx.h"

// GCC 12 reports the deliberately undefined upper lanes inside the AVX-512
// reductions as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace strata {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Sums a range with 4 independent 256-bit accumulators (reads only).
__attribute__((target("avx2"))) uint64_t sum_avx2(const uint8_t* p, size_t bytes) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  for (size_t i = 0; i + 128 <= bytes; i += 128) {
    a0 = _mm256_add_epi64(a0, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i)));
    a1 = _mm256_add_epi64(a1, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 32)));
    a2 = _mm256_add_epi64(a2, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 64)));
    a3 = _mm256_add_epi64(a3, _mm256_load_si256(reinterpret_cast<const __m256i*>(p + i + 96)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

uint64_t sum_scalar(const uint8_t* p, size_t bytes) {
  uint64_t a = 0, b = 0;
  for (size_t i = 0; i + 16 <= bytes; i += 16) {
    uint64_t x, y;
    std::memcpy(&x, p + i, 8);
    std::memcpy(&y, p + i + 8, 8);
    a += x;
    b += y;
  }
  return a + b;
}

// Sanitizer builds (make check, make check-tsan) instrument the bandwidth
// loop's loads, so a quick measurement there takes seconds per server
// start-up (4 s under TSan) for a figure that means nothing: they measure a
// 16 MiB buffer and a 64th of the compute loops instead.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kInstrumented = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kInstrumented = true;
#else
constexpr bool kInstrumented = false;
#endif
#else
constexpr bool kInstrumented = false;
#endif

constexpr int64_t kFmaIters = 1 << 22;
// Rounds of the tile unit's loop (four TDPBSSD each); the AMX emulator
// (tests only: strata_kernels_amx_emulated) runs a 256th of them, a figure
// that means nothing there either.
#if defined(STRATA_AMX_EMULATE)
constexpr int64_t kTileIters = 1 << 8, kQuickTileIters = 1 << 5;
#else
constexpr int64_t kTileIters = 1 << 16, kQuickTileIters = kInstrumented ? 1 << 10 : 1 << 13;
#endif
// measure_machine_ceilings(quick): an eighth of the loops (a few ms each).
constexpr int64_t kQuickFmaIters = kInstrumented ? kFmaIters / 64 : kFmaIters / 8;
constexpr size_t kQuickBandwidthBytes = kInstrumented ? size_t{16} << 20 : size_t{256} << 20;

// 12 independent FMA chains keep both FMA pipes busy past their latency.
__attribute__((target("avx512f"))) float fma_loop_avx512(int64_t iters) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-3f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iters) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(static_cast<float>(i));
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-3f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, s);
  float total = 0.0f;
  for (float v : lanes) total += v;
  return total;
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) int dot_loop_vnni(int64_t iters) {
  __m512i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], a, b);
  }
  // The sums wrap (vpdpbusd does not saturate); fold them as unsigned, where
  // wrapping is defined (_mm512_reduce_add_epi32 adds as int).
  __m512i s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_epi32(s, acc[i]);
  alignas(64) uint32_t lanes[16];
  _mm512_store_si512(lanes, s);
  uint32_t total = 0;
  for (uint32_t v : lanes) total += v;
  return static_cast<int>(total & 0x7fffffff);
}

// The AVX2 kernels' int8 dot: vpmaddubsw then vpmaddwd (32 MACs per pair).
__attribute__((target("avx2"))) int dot_loop_avx2(int64_t iters) {
  __m256i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) {
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), ones));
    }
  }
  __m256i s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm256_add_epi32(s, acc[i]);
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  uint32_t total = 0;  // the sums wrap: fold them where wrapping is defined
  for (uint32_t v : lanes) total += v;
  return static_cast<int>(total & 0x7fffffff);
}

// Runs `body` on every thread; returns the rate `units_per_thread * nth /
// seconds`, best of three.
template <class Body>
double best_rate(ThreadPool& pool, double units_per_thread, Body body) {
  double best = 0.0;
  std::atomic<int64_t> sink{0};
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = Clock::now();
    pool.run([&](int ith, int nth) { sink += static_cast<int64_t>(body(ith, nth)); });
    best = std::max(best, units_per_thread * pool.num_threads() / seconds_since(t0));
  }
  return best + 0.0 * static_cast<double>(sink.load());
}

}  // namespace

double measure_read_bandwidth_gbs(ThreadPool& pool, size_t buffer_bytes) {
  const int nth = pool.num_threads();
  const size_t per_thread = buffer_bytes / static_cast<size_t>(nth) / 4096 * 4096;
  std::vector<uint8_t*> buffers(nth, nullptr);
  // Each thread allocates and touches its own share (first-touch placement).
  pool.run([&](int ith, int) {
    buffers[ith] = static_cast<uint8_t*>(std::aligned_alloc(4096, per_thread));
    std::memset(buffers[ith], ith + 1, per_thread);
  });
  const bool avx2 = kernel_isa_has_avx2(kernel_isa());
  double best = 0.0;
  for (int rep = 0; rep < 4; ++rep) {
    std::atomic<uint64_t> sink{0};
    const auto t0 = Clock::now();
    pool.run([&](int ith, int) {
      sink += avx2 ? sum_avx2(buffers[ith], per_thread) : sum_scalar(buffers[ith], per_thread);
    });
    const double s = seconds_since(t0);
    if (rep > 0) best = std::max(best, static_cast<double>(per_thread) * nth / s / 1e9);
  }
  for (uint8_t* b : buffers) std::free(b);
  return best;
}

namespace {

double peak_fp32_gflops(ThreadPool& pool, int64_t iters) {
  const KernelIsa isa = kernel_isa();
  if (isa == KernelIsa::kAvx512Vnni) {
    return best_rate(pool, static_cast<double>(iters) * 12.0 * 16 * 2 / 1e9,
                     [iters](int, int) { return fma_loop_avx512(iters); });
  }
  if (kernel_isa_has_avx2(isa)) {
    return best_rate(pool, static_cast<double>(iters) * 12.0 * 8 * 2 / 1e9,
                     [iters](int, int) { return fma_loop_avx2(iters); });
  }
  return 0.0;
}

double peak_int8_gops(ThreadPool& pool, int64_t iters) {
  const KernelIsa isa = kernel_isa();
  if (isa == KernelIsa::kAvx512Vnni) {
    return best_rate(pool, static_cast<double>(iters) * 12.0 * 64 * 2 / 1e9,
                     [iters](int, int) { return dot_loop_vnni(iters); });
  }
  if (kernel_isa_has_avx2(isa)) {
    return best_rate(pool, static_cast<double>(iters) * 12.0 * 32 * 2 / 1e9,
                     [iters](int, int) { return dot_loop_avx2(iters); });
  }
  return 0.0;
}

double peak_amx_int8_gops(ThreadPool& pool, int64_t tile_iters) {
  if (!amx_support().usable()) return 0.0;
  return best_rate(pool, static_cast<double>(tile_iters) * 4.0 * 16 * 16 * 32 * 2 / 1e9,
                   [tile_iters](int, int) { return amx::tile_dot_loop(tile_iters); });
}

}  // namespace

double measure_peak_fp32_gflops(ThreadPool& pool) {
  return peak_fp32_gflops(pool, kFmaIters);
}

double measure_peak_int8_gops(ThreadPool& pool) {
  return peak_int8_gops(pool, kFmaIters);
}

double measure_peak_amx_int8_gops(ThreadPool& pool) {
  return peak_amx_int8_gops(pool, kTileIters);
}

MachineCeilings measure_machine_ceilings(ThreadPool& pool, bool quick) {
  MachineCeilings m;
  const char* bw_env = std::getenv("STRATA_MEM_BW_GBS");
  m.read_bw_gbs = bw_env != nullptr ? std::atof(bw_env)
                                    : measure_read_bandwidth_gbs(
                                          pool, quick ? kQuickBandwidthBytes : size_t{512} << 20);
  const int64_t iters = quick ? kQuickFmaIters : kFmaIters;
  m.fp32_gflops = peak_fp32_gflops(pool, iters);
  m.int8_gops = peak_int8_gops(pool, iters);
  m.amx_int8_gops = peak_amx_int8_gops(pool, quick ? kQuickTileIters : kTileIters);
  return m;
}

}  // namespace strata
