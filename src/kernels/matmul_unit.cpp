#include "kernels/matmul_unit.h"

#include <emmintrin.h>  // _mm_clflush (SSE2: baseline x86-64)
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string_view>

#include "kernels/amx_support.h"
#include "kernels/dispatch.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_avx512.h"
#include "kernels/matmul_kquant_amx.h"
#include "kernels/matmul_kquant_avx512.h"

namespace strata {
namespace {

AmxMode initial_mode() {
  if (!amx_support().usable()) return AmxMode::kOff;
  const char* env = std::getenv("STRATA_KERNEL_ISA");
  if (env == nullptr || *env == '\0') return AmxMode::kMeasured;
  return std::string_view(env) == "amx" ? AmxMode::kForced : AmxMode::kOff;
}

std::atomic<AmxMode>& mode_ref() {
  static std::atomic<AmxMode> mode{initial_mode()};
  return mode;
}

struct ShapeChoice {
  DType type;
  int64_t rows;
  int64_t cols;
  std::vector<UnitTiming> by_n;  // ascending n
};

std::mutex& choices_mutex() {
  static std::mutex m;
  return m;
}
std::vector<ShapeChoice>& choices() {
  static std::vector<ShapeChoice> c;
  return c;
}

// The two units of one weight family: the activation encoding both read,
// and each unit's rows kernel.
struct UnitPair {
  size_t (*activation_row_bytes)(DType, int64_t);
  void (*encode_activation_row)(DType, const float*, int64_t, void*);
  void (*vnni_rows)(const WeightView&, const uint8_t*, size_t, int64_t, float*, int64_t, int64_t);
  void (*amx_rows)(const WeightView&, const uint8_t*, size_t, int64_t, float*, int64_t, int64_t);
};

constexpr UnitPair kQuantUnits = {avx512::activation_row_bytes, avx512::encode_activation_row,
                                  avx512::matmul_rows, amx::matmul_rows};
constexpr UnitPair kKQuantUnits = {avx512_kquant::activation_row_bytes,
                                   avx512_kquant::encode_activation_row, avx512_kquant::matmul_rows,
                                   amx::kquant_matmul_rows};

// The weights of amx::matmul_supports: kTiled16 Q4_0/Q8_0, packed for the
// VNNI kernel, which alone reads that layout. (Spelled out here: code in
// matmul_amx*.cpp may use AVX-512 even in a predicate, and this file runs
// on every CPU.)
bool is_tiled_int8(const WeightView& w) {
  return w.layout == WeightLayout::kTiled16 && (w.type == DType::kQ8_0 || w.type == DType::kQ4_0);
}

// amx::kquant_matmul_supports, while the VNNI kernel runs the type.
bool is_gguf_kquant(const WeightView& w) {
  return w.layout == WeightLayout::kGguf && (w.type == DType::kQ4_K || w.type == DType::kQ6_K) &&
         kernel_isa() == KernelIsa::kAvx512Vnni;
}

// amx::float_matmul_supports, while the AVX-512 float kernel runs the type
// and the tile unit has bf16.
bool is_gguf_float(const WeightView& w) {
  return w.layout == WeightLayout::kGguf && (w.type == DType::kF16 || w.type == DType::kBF16) &&
         w.cols > 0 && w.cols % 32 == 0 && kernel_isa() == KernelIsa::kAvx512Vnni &&
         amx_support().cpu_has_amx_bf16;
}

// The int8 pairs whose two units give the same bits (chosen per n).
bool amx_applies(const WeightView& w) {
  return is_tiled_int8(w) || is_gguf_kquant(w);
}

const UnitPair& units_of(const WeightView& w) {
  return is_tiled_int8(w) ? kQuantUnits : kKQuantUnits;
}

// CPU time of this thread, microseconds: unlike wall time, not inflated
// when a shared machine's neighbours preempt it.
double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return 1e6 * static_cast<double>(ts.tv_sec) + 1e-3 * static_cast<double>(ts.tv_nsec);
}

// One thread's share of a matmul on `unit`: rows [0, rows) of w against n
// encoded activation rows, on this thread. Microseconds of CPU time.
//
// The weight rows are flushed from the caches first: in a forward pass each
// weight comes from DRAM (a model's layers are far larger than the caches),
// and rows repeated warm from L2 would favour the unit that is slower at
// streaming them (the Q4_K kernels' margin is small enough to flip).
double time_us(MatmulUnit unit, const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes,
               int64_t n, float* y, int64_t rows) {
  const UnitPair& u = units_of(w);
  const auto* bytes = static_cast<const char*>(w.data);
  const size_t weight_bytes = static_cast<size_t>(rows) * w.row_bytes;
  for (size_t o = 0; o < weight_bytes; o += 64) _mm_clflush(bytes + o);
  _mm_mfence();
  const double t0 = thread_cpu_us();
  (unit == MatmulUnit::kAmx ? u.amx_rows : u.vnni_rows)(w, x_enc, x_row_bytes, n, y, 0, rows);
  return thread_cpu_us() - t0;
}

// Rows timed per shape: enough 32-row steps to be representative, few
// enough that calibration stays short (the work per row is the same).
constexpr int64_t kTimedRows = 512;

// AMX must beat VNNI by this factor to be picked: ties go to the unit that
// needs no tile state, and a shared machine's noise does not flip choices.
constexpr double kAmxMargin = 0.97;

}  // namespace

const char* matmul_unit_name(MatmulUnit unit) {
  return unit == MatmulUnit::kAmx ? "amx" : "vnni";
}

const char* amx_mode_name(AmxMode mode) {
  switch (mode) {
    case AmxMode::kForced:
      return "forced";
    case AmxMode::kMeasured:
      return "measured";
    default:
      return "off";
  }
}

AmxMode amx_mode() {
  return mode_ref().load(std::memory_order_relaxed);
}

AmxMode set_amx_mode(AmxMode mode) {
  if (!amx_support().usable()) mode = AmxMode::kOff;
  mode_ref().store(mode, std::memory_order_relaxed);
  return mode;
}

MatmulUnit matmul_unit_for(const WeightView& w, int64_t n) {
  const AmxMode mode = amx_mode();
  if (mode == AmxMode::kOff) return MatmulUnit::kVnni;
  // F16/BF16: the bf16 tile unit agrees with the AVX-512 kernel only to
  // fp32 rounding, so it runs every n of a shape or none, and only when
  // forced: a measured choice could differ between processes that share
  // KV (disaggregated prefill, the disk and Redis tiers, model-parallel
  // ranks), and their tokens would then depend on which process ran them.
  if (is_gguf_float(w)) return mode == AmxMode::kForced ? MatmulUnit::kAmx : MatmulUnit::kVnni;
  if (!amx_applies(w)) return MatmulUnit::kVnni;
  // The int8 AMX kernels run whole 16-token tiles only (the rest on VNNI).
  if (n < 16) return MatmulUnit::kVnni;
  if (mode == AmxMode::kForced) return MatmulUnit::kAmx;
  {
    std::lock_guard<std::mutex> lock(choices_mutex());
    for (const ShapeChoice& s : choices()) {
      if (s.type != w.type || s.rows != w.rows || s.cols != w.cols || s.by_n.empty()) continue;
      const UnitTiming* pick = &s.by_n.front();
      for (const UnitTiming& t : s.by_n) {
        if (t.n <= n) pick = &t;
      }
      return pick->unit;
    }
  }
  return n >= kAmxDefaultMinTokens ? MatmulUnit::kAmx : MatmulUnit::kVnni;
}

std::vector<UnitTiming> calibrate_matmul_units(const std::vector<WeightView>& weights,
                                               const std::vector<int64_t>& token_counts) {
  std::vector<UnitTiming> out;
  if (amx_mode() != AmxMode::kMeasured || token_counts.empty()) return out;
  std::vector<int64_t> counts = token_counts;
  std::sort(counts.begin(), counts.end());
  const int64_t max_n = counts.back();
  std::vector<ShapeChoice> found;
  std::vector<float> x, y;
  std::vector<uint8_t> x_enc;
  for (const WeightView& w : weights) {
    if (!amx_applies(w) || w.rows <= 0) continue;
    const auto same = [&](const ShapeChoice& s) {
      return s.type == w.type && s.rows == w.rows && s.cols == w.cols;
    };
    if (std::any_of(found.begin(), found.end(), same)) continue;
    {
      // Measured by an earlier call (another runner of the same model).
      std::lock_guard<std::mutex> lock(choices_mutex());
      if (std::any_of(choices().begin(), choices().end(), same)) continue;
    }
    ShapeChoice shape{w.type, w.rows, w.cols, {}};
    // Activations of a typical scale; values do not change the work done.
    x.resize(static_cast<size_t>(max_n * w.cols));
    std::mt19937 rng(static_cast<uint32_t>(w.rows * 31 + w.cols));
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float& v : x) v = dist(rng);
    const UnitPair& units = units_of(w);
    const size_t x_row_bytes = units.activation_row_bytes(w.type, w.cols);
    x_enc.resize(x_row_bytes * static_cast<size_t>(max_n));
    for (int64_t t = 0; t < max_n; ++t) {
      units.encode_activation_row(w.type, x.data() + t * w.cols, w.cols,
                                  x_enc.data() + static_cast<size_t>(t) * x_row_bytes);
    }
    const int64_t rows = std::min(w.rows, kTimedRows);
    y.resize(static_cast<size_t>(max_n * w.rows));
    for (int64_t n : counts) {
      if (n <= 0) continue;
      UnitTiming t;
      t.type = w.type;
      t.rows = w.rows;
      t.cols = w.cols;
      t.n = n;
      if (n < 16) {  // no whole token tile: VNNI by construction, nothing to time
        t.unit = MatmulUnit::kVnni;
      } else {
        // Alternating runs, best of each after a warm-up of each.
        const auto run = [&](MatmulUnit u) {
          return time_us(u, w, x_enc.data(), x_row_bytes, n, y.data(), rows);
        };
        run(MatmulUnit::kVnni);
        run(MatmulUnit::kAmx);
        t.vnni_us = t.amx_us = 1e300;
        for (int i = 0; i < 3; ++i) {
          t.vnni_us = std::min(t.vnni_us, run(MatmulUnit::kVnni));
          t.amx_us = std::min(t.amx_us, run(MatmulUnit::kAmx));
        }
        t.unit = t.amx_us < kAmxMargin * t.vnni_us ? MatmulUnit::kAmx : MatmulUnit::kVnni;
      }
      shape.by_n.push_back(t);
      out.push_back(t);
    }
    found.push_back(std::move(shape));
  }
  std::lock_guard<std::mutex> lock(choices_mutex());
  for (ShapeChoice& s : found) choices().push_back(std::move(s));
  return out;
}

void clear_matmul_unit_choices() {
  std::lock_guard<std::mutex> lock(choices_mutex());
  choices().clear();
}

std::vector<std::string> matmul_unit_summary() {
  std::vector<std::string> lines;
  const AmxMode mode = amx_mode();
  std::lock_guard<std::mutex> lock(choices_mutex());
  if (mode != AmxMode::kMeasured || choices().empty()) {
    char buf[160];
    if (mode == AmxMode::kOff) {
      const AmxSupport& s = amx_support();
      std::snprintf(buf, sizeof(buf), "matmul unit: vnni (amx off: %s)",
                    s.usable() ? "STRATA_KERNEL_ISA" : s.reason());
    } else if (mode == AmxMode::kForced) {
      std::snprintf(buf, sizeof(buf), "matmul unit: amx for n >= 16 (STRATA_KERNEL_ISA=amx)");
    } else {
      std::snprintf(buf, sizeof(buf), "matmul unit: amx for n >= %lld (not measured)",
                    static_cast<long long>(kAmxDefaultMinTokens));
    }
    lines.emplace_back(buf);
    return lines;
  }
  for (const ShapeChoice& s : choices()) {
    std::string line = "matmul unit " + std::string(dtype_name(s.type)) + " " +
                       std::to_string(s.rows) + "x" + std::to_string(s.cols) + ":";
    for (const UnitTiming& t : s.by_n) {
      char buf[64];
      if (t.amx_us > 0) {
        std::snprintf(buf, sizeof(buf), " n=%lld %s (%.2fx)", static_cast<long long>(t.n),
                      matmul_unit_name(t.unit), t.vnni_us / t.amx_us);
      } else {
        std::snprintf(buf, sizeof(buf), " n=%lld vnni", static_cast<long long>(t.n));
      }
      line += buf;
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace strata
