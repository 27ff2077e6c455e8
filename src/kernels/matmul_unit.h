// MatmulUnit: which kernel runs an int8 matmul that has two, the AVX-512
// VNNI kernel or the AMX tile kernel, chosen per (weight type, shape, token
// count): Q4_0/Q8_0 weights in the kTiled16 layout (matmul_amx.h) and
// Q4_K/Q6_K weights in the GGUF layout while the VNNI kernels run
// (matmul_kquant_amx.h).
//
// Both units give the same bits for every input (same exact block dots,
// same fp32 scale and FMA order), so the choice changes speed only, never
// a token's outputs: batch invariance holds whichever unit a step picks.
//
// The mode comes from STRATA_KERNEL_ISA on first use: "amx" forces the AMX
// kernel wherever it applies, any other cap (avx512vnni, avx2, scalar)
// turns it off, and unset means "measured": the unit each (shape, n)
// measured fastest in calibrate_matmul_units(), or before calibration (or
// for a shape it did not see) a fixed token-count threshold. Without a
// usable AMX (see amx_support.h) the mode is always kOff.
//
// F16/BF16 weights (matmul_float_amx.h, bf16 tiles) are the exception: that
// unit agrees with the AVX-512 kernel to fp32 rounding, not bit for bit, so
// it runs every n of a weight or none, and only in kForced: a measured
// choice could differ between processes sharing KV (disaggregated prefill,
// the KV tiers, model-parallel ranks). Calibration does not time them.
//
// Thread-safety: all functions may be called from any thread. set_amx_mode
// while matmuls run changes only which unit later calls use (same bits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/matmul.h"

namespace strata {

enum class MatmulUnit : uint8_t { kVnni, kAmx };
const char* matmul_unit_name(MatmulUnit unit);

enum class AmxMode : uint8_t { kOff, kMeasured, kForced };
const char* amx_mode_name(AmxMode mode);

AmxMode amx_mode();
// Sets the mode (kOff when AMX is not usable); returns the mode now in force.
AmxMode set_amx_mode(AmxMode mode);

// Without a measurement, AMX from this many tokens on (whole 16-token tiles).
constexpr int64_t kAmxDefaultMinTokens = 32;

// The unit matmul() uses for weight w (kTiled16 Q4_0/Q8_0, GGUF Q4_K/Q6_K
// at the VNNI ISA, GGUF F16/BF16 when forced; any other weight answers
// kVnni) and n activation rows.
MatmulUnit matmul_unit_for(const WeightView& w, int64_t n);

// The token counts the scheduler produces (decode, batched decode, prefill
// chunks), which calibration times.
inline const std::vector<int64_t>& scheduler_token_counts() {
  static const std::vector<int64_t> counts = {1, 8, 32, 128, 512};
  return counts;
}

struct UnitTiming {
  DType type = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t n = 0;
  double vnni_us = 0;  // best of a few runs, microseconds of one thread's CPU
  double amx_us = 0;   // time (0: not timed, n < 16 has no whole AMX token tile)
  MatmulUnit unit = MatmulUnit::kVnni;
};

// Times both units on each distinct (type, rows, cols) of `weights` that
// AMX handles and no earlier call measured, at each token count, and
// records the faster one per (shape, n) (AMX only when it is 3% faster);
// matmul_unit_for then picks by it (a count between two measured ones
// takes the choice of the largest one below it). Timing is one thread's
// share of the work (up to 512 rows) on the calling thread in CPU time, so
// a busy shared machine does not skew it; the timed weight rows are
// flushed from the caches before each run, as a forward pass streams them
// from DRAM. Returns the new timings (empty when the mode is not
// kMeasured); ~0.15 s per distinct (type, shape) of the 1.1B model up to
// n = 512.
// clear_matmul_unit_choices() forgets them.
std::vector<UnitTiming> calibrate_matmul_units(
    const std::vector<WeightView>& weights,
    const std::vector<int64_t>& token_counts = scheduler_token_counts());
void clear_matmul_unit_choices();

// The recorded choices, one line per shape, e.g.
// "matmul unit q8_0 2048x2048: n=1 vnni n=8 vnni n=32 amx (1.26x) ..."
// (the factor: VNNI time / AMX time); or the mode
// when nothing was measured. For the start-up log.
std::vector<std::string> matmul_unit_summary();

}  // namespace strata
