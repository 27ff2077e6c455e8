// ForwardProfile: where a forward pass's time goes, phase by phase, next to
// the roofline floor of the same work on this machine.
//
// ModelRunner times each piece of a forward pass (lap to lap, so the phases
// add up to the whole pass) and records it here with the work it did:
// arithmetic operations (a multiply-add counts 2) and the bytes that must
// cross the memory bus at least once (weights, KV read, activations in and
// out). With the machine's measured ceilings (kernels/roofline.h) each
// record also gets its floor, max(ops / peak, bytes / bandwidth), and the
// bound that sets it: compute (prefill matmuls, long attention) or memory
// (decode matmuls, elementwise ops); without ceilings every record is filed
// under kNone with no floor. floor / seconds is the fraction of the
// ceiling achieved; `strata bench forward` prints it per phase and /metrics
// exports both sums (strata:forward_phase_*).
//
// The peak a matmul is measured against is its weight's arithmetic: the
// int8 dot-product rate for Q8_0/Q4_0/Q4_K/Q6_K (the AMX tile rate from 16
// rows on where the CPU has usable AMX), the fp32 FMA rate for float
// weights; attention runs at the fp32 rate. Elementwise ops (norms, rope,
// activation, residual adds, embedding) count bytes only; the exchanges of
// a model-parallel group (all-reduce, pipeline send and receive, logits
// gather) count time only, with no floor.
//
// Not thread-safe: the engine thread records, take() hands the totals to
// Metrics.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <initializer_list>

#include "kernels/matmul.h"
#include "kernels/roofline.h"

namespace strata {

enum class ForwardPhase : uint8_t {
  kQkvProj,      // attn_q, attn_k, attn_v matmuls
  kAttention,    // KV write and paged attention
  kOProj,        // attn_output matmul
  kGateUpProj,   // ffn_gate, ffn_up matmuls
  kDownProj,     // ffn_down matmul
  kLmHead,       // output matmul of the rows that sample
  kElementwise,  // embedding, norms, bias, rope, SiLU x up, residual adds
  kExchange,     // model parallel: all-reduce, pipeline send/receive, logits gather
};
constexpr int kNumForwardPhases = 8;
const char* forward_phase_name(ForwardPhase phase);

// Which term of a record's floor is larger (kNone: no floor modelled).
enum class RooflineBound : uint8_t { kCompute, kMemory, kNone };
constexpr int kNumRooflineBounds = 3;
const char* roofline_bound_name(RooflineBound bound);

// The arithmetic a record's ops are measured against.
enum class Arithmetic : uint8_t { kInt8, kAmxInt8, kFp32, kNone };

struct PhaseTotals {
  double seconds = 0;
  double floor_seconds = 0;  // 0 without ceilings
  double ops = 0;
  double bytes = 0;
  int64_t calls = 0;
  void add(const PhaseTotals& o);
};

struct ForwardProfileTotals {
  std::array<std::array<PhaseTotals, kNumRooflineBounds>, kNumForwardPhases> by{};
  PhaseTotals& at(ForwardPhase p, RooflineBound b) {
    return by[static_cast<int>(p)][static_cast<int>(b)];
  }
  const PhaseTotals& at(ForwardPhase p, RooflineBound b) const {
    return by[static_cast<int>(p)][static_cast<int>(b)];
  }
  PhaseTotals phase(ForwardPhase p) const;  // summed over bounds
  PhaseTotals total() const;                // summed over everything
  void add(const ForwardProfileTotals& o);
  bool empty() const { return total().calls == 0; }
};

// Whether a weight type's matmul runs on int8 dot products (Q8_0, Q4_0,
// Q4_K, Q6_K); float weights run on fp32 FMAs.
bool uses_int8_dot(DType type);
// The arithmetic a matmul of weight w over n rows runs on.
Arithmetic matmul_arithmetic(const WeightView& w, int64_t n, const MachineCeilings& ceilings);
// Ops and bytes of y[n][w.rows] = x[n][w.cols] W^T: 2 rows cols n, and the
// weight bytes plus fp32 activations in and out.
double matmul_ops(const WeightView& w, int64_t n);
double matmul_bytes(const WeightView& w, int64_t n);

class ForwardProfile {
 public:
  using Clock = std::chrono::steady_clock;

  void set_ceilings(const MachineCeilings& ceilings) { ceilings_ = ceilings; }
  const MachineCeilings& ceilings() const { return ceilings_; }

  // Records the work since `since` and returns now (the next lap's start).
  Clock::time_point lap(Clock::time_point since, ForwardPhase phase, double ops, double bytes,
                        Arithmetic arithmetic);
  // A lap of matmuls over the same n rows (e.g. q, k and v).
  Clock::time_point lap_matmuls(Clock::time_point since, ForwardPhase phase,
                                std::initializer_list<const WeightView*> weights, int64_t n);

  const ForwardProfileTotals& totals() const { return totals_; }
  // The totals since the last take(); starts over.
  ForwardProfileTotals take();

 private:
  MachineCeilings ceilings_;
  ForwardProfileTotals totals_;
};

}  // namespace strata
