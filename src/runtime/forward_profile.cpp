#include "runtime/forward_profile.h"

#include <algorithm>

namespace strata {

const char* forward_phase_name(ForwardPhase phase) {
  switch (phase) {
    case ForwardPhase::kQkvProj:
      return "qkv_proj";
    case ForwardPhase::kAttention:
      return "attention";
    case ForwardPhase::kOProj:
      return "o_proj";
    case ForwardPhase::kGateUpProj:
      return "gate_up_proj";
    case ForwardPhase::kDownProj:
      return "down_proj";
    case ForwardPhase::kLmHead:
      return "lm_head";
    case ForwardPhase::kElementwise:
      return "elementwise";
    case ForwardPhase::kExchange:
      return "exchange";
  }
  return "?";
}

const char* roofline_bound_name(RooflineBound bound) {
  switch (bound) {
    case RooflineBound::kCompute:
      return "compute";
    case RooflineBound::kMemory:
      return "memory";
    case RooflineBound::kNone:
      return "none";
  }
  return "?";
}

void PhaseTotals::add(const PhaseTotals& o) {
  seconds += o.seconds;
  floor_seconds += o.floor_seconds;
  ops += o.ops;
  bytes += o.bytes;
  calls += o.calls;
}

PhaseTotals ForwardProfileTotals::phase(ForwardPhase p) const {
  PhaseTotals t;
  for (const PhaseTotals& b : by[static_cast<int>(p)]) t.add(b);
  return t;
}

PhaseTotals ForwardProfileTotals::total() const {
  PhaseTotals t;
  for (int p = 0; p < kNumForwardPhases; ++p) t.add(phase(static_cast<ForwardPhase>(p)));
  return t;
}

void ForwardProfileTotals::add(const ForwardProfileTotals& o) {
  for (int p = 0; p < kNumForwardPhases; ++p) {
    for (int b = 0; b < kNumRooflineBounds; ++b) by[p][b].add(o.by[p][b]);
  }
}

bool uses_int8_dot(DType type) {
  return type == DType::kQ8_0 || type == DType::kQ4_0 || type == DType::kQ4_K ||
         type == DType::kQ6_K;
}

Arithmetic matmul_arithmetic(const WeightView& w, int64_t n, const MachineCeilings& ceilings) {
  if (!uses_int8_dot(w.type)) return Arithmetic::kFp32;
  // The AMX kernels take whole 16-row token tiles (matmul_unit.h).
  return ceilings.amx_int8_gops > 0 && n >= 16 ? Arithmetic::kAmxInt8 : Arithmetic::kInt8;
}

double matmul_ops(const WeightView& w, int64_t n) {
  return 2.0 * static_cast<double>(w.rows) * static_cast<double>(w.cols) * static_cast<double>(n);
}

double matmul_bytes(const WeightView& w, int64_t n) {
  return static_cast<double>(w.row_bytes) * static_cast<double>(w.rows) +
         4.0 * static_cast<double>(n) * static_cast<double>(w.rows + w.cols);
}

ForwardProfile::Clock::time_point ForwardProfile::lap(Clock::time_point since, ForwardPhase phase,
                                                      double ops, double bytes,
                                                      Arithmetic arithmetic) {
  const Clock::time_point now = Clock::now();
  double peak = 0;  // operations per second
  switch (arithmetic) {
    case Arithmetic::kInt8:
      peak = ceilings_.int8_gops * 1e9;
      break;
    case Arithmetic::kAmxInt8:
      peak = ceilings_.amx_int8_gops * 1e9;
      break;
    case Arithmetic::kFp32:
      peak = ceilings_.fp32_gflops * 1e9;
      break;
    case Arithmetic::kNone:
      break;
  }
  const double compute_s = peak > 0 ? ops / peak : 0.0;
  const double memory_s = ceilings_.read_bw_gbs > 0 ? bytes / (ceilings_.read_bw_gbs * 1e9) : 0.0;
  RooflineBound bound = compute_s >= memory_s ? RooflineBound::kCompute : RooflineBound::kMemory;
  double floor_s = std::max(compute_s, memory_s);
  if (phase == ForwardPhase::kExchange || !ceilings_.known()) {
    // No floor: the exchanges have none, and without ceilings neither term
    // says which bound a record is under.
    bound = RooflineBound::kNone;
    floor_s = 0;
  } else if (arithmetic == Arithmetic::kNone) {
    bound = RooflineBound::kMemory;
  }
  PhaseTotals& t = totals_.at(phase, bound);
  t.seconds += std::chrono::duration<double>(now - since).count();
  t.floor_seconds += floor_s;
  t.ops += ops;
  t.bytes += bytes;
  ++t.calls;
  return now;
}

ForwardProfile::Clock::time_point ForwardProfile::lap_matmuls(
    Clock::time_point since, ForwardPhase phase, std::initializer_list<const WeightView*> weights,
    int64_t n) {
  // One record per lap (the matmuls ran back to back): the ops and bytes add
  // up, the floor is that of the sum at the first weight's arithmetic (a
  // lap's weights share a type in every GGUF mix but Q4_K_M's, whose Q4_K
  // and Q6_K both run on int8 dot products).
  double ops = 0, bytes = 0;
  for (const WeightView* w : weights) {
    ops += matmul_ops(*w, n);
    bytes += matmul_bytes(*w, n);
  }
  return lap(since, phase, ops, bytes, matmul_arithmetic(**weights.begin(), n, ceilings_));
}

ForwardProfileTotals ForwardProfile::take() {
  ForwardProfileTotals t = totals_;
  totals_ = ForwardProfileTotals{};
  return t;
}

}  // namespace strata
