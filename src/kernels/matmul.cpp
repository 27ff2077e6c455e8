#include "kernels/matmul.h"

#include <algorithm>
#include <cassert>
#include <span>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/matmul_amx.h"
#include "kernels/matmul_avx2.h"
#include "kernels/matmul_avx512.h"
#include "kernels/matmul_float_amx.h"
#include "kernels/matmul_float_avx512.h"
#include "kernels/matmul_kquant_amx.h"
#include "kernels/matmul_kquant_avx512.h"
#include "kernels/matmul_unit.h"
#include "kernels/vec_dot.h"
#include "util/chunk_claims.h"

namespace strata {
namespace {

// Activations encoded once per matmul into a buffer owned by the calling
// thread and reused across calls: no allocation after warm-up.
uint8_t* activation_scratch(size_t bytes) {
  thread_local std::vector<uint8_t> buffer;
  constexpr size_t kAlign = 64;
  if (buffer.size() < bytes + kAlign) buffer.resize(bytes + kAlign);
  const auto addr = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + ((kAlign - addr % kAlign) % kAlign);
}

// Below this many activation rows the encoding runs on the calling thread:
// a second pool round-trip costs more than it saves.
constexpr int64_t kParallelEncodeRows = 8;

void matmul_rows_scalar(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                        float* y, int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;
  const auto* wd = static_cast<const uint8_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* w_row = wd + static_cast<size_t>(r) * w.row_bytes;
    for (int64_t t = 0; t < n; ++t) {
      y[t * w.rows + r] = vec_dot::dot_ref(w.type, w_row, x_enc + t * x_row_bytes, w.cols);
    }
  }
}

// One family of kernels: how it encodes activations and computes rows.
struct MatmulBackend {
  size_t (*activation_row_bytes)(DType, int64_t);
  void (*encode_activation_row)(DType, const float*, int64_t, void*);
  void (*matmul_rows)(const WeightView&, const uint8_t*, size_t, int64_t, float*, int64_t, int64_t);
  // Rows go to threads in multiples of this (the kernel's row tile).
  int64_t row_share;
  // Whether rows may go to threads in many chunks (ChunkClaims). The AMX
  // kernels stage every activation into tile order on each call, so they
  // take one share per thread.
  bool chunked;
};

constexpr MatmulBackend kScalarBackend = {
    vec_dot::activation_row_bytes, vec_dot::encode_activation_row, matmul_rows_scalar, 1, true};
constexpr MatmulBackend kAvx2Backend = {avx2::activation_row_bytes, avx2::encode_activation_row,
                                        avx2::matmul_rows, avx2::kRowShare, true};
constexpr MatmulBackend kAvx512QuantBackend = {avx512::activation_row_bytes,
                                               avx512::encode_activation_row, avx512::matmul_rows,
                                               avx512::kRowShare, true};
// The AMX kernel reads the VNNI kernel's activation encoding and layout.
constexpr MatmulBackend kAmxQuantBackend = {avx512::activation_row_bytes,
                                            avx512::encode_activation_row, amx::matmul_rows,
                                            avx512::kRowShare, false};
constexpr MatmulBackend kAvx512KQuantBackend = {
    avx512_kquant::activation_row_bytes, avx512_kquant::encode_activation_row,
    avx512_kquant::matmul_rows, avx512_kquant::kRowShare, true};
// The AMX Q4_K/Q6_K kernel reads the VNNI kernel's activations and weights.
constexpr MatmulBackend kAmxKQuantBackend = {
    avx512_kquant::activation_row_bytes, avx512_kquant::encode_activation_row,
    amx::kquant_matmul_rows, avx512_kquant::kRowShare, false};
constexpr MatmulBackend kAvx512FloatBackend = {
    avx512_float::activation_row_bytes, avx512_float::encode_activation_row,
    avx512_float::matmul_rows, avx512_float::kRowShare, true};
// The AMX bf16 kernel reads the AVX-512 float kernel's activations; it
// splits rows in whole 16-row tiles.
constexpr MatmulBackend kAmxFloatBackend = {avx512_float::activation_row_bytes,
                                            avx512_float::encode_activation_row,
                                            amx::float_matmul_rows, amx::kFloatRowShare, false};

// From this many tokens on, a matmul's rows go to the threads in chunks as
// they ask (ChunkClaims) rather than in one equal share each. There a step
// is compute-bound, so a thread's speed, not its share of memory bandwidth,
// sets its pace, and on a VM the two vCPUs' speeds differ by a few percent:
// with equal shares the faster thread waited ~6% of a 1.1B Q4_0 pp512
// (perf, Zen 4 VM). Fewer tokens stream the weights from memory, where one
// long sequential range per thread measured better or even (chunks at every
// n: 1.1B Q4_0 decode at 0.96x the tokens/s; 16 streams 0.98x, 24 streams
// 1.05x; a layer pass of 8 tokens 0.96-1.02x the time, of 24-32 tokens
// 0.89-0.94x).
constexpr int64_t kChunkedMinTokens = 24;

// The kernels for a weight on this CPU. One family serves every n, so a
// token's outputs never depend on the batch it is in. A kTiled16 weight was
// packed because this CPU runs the AVX-512 VNNI kernel, which alone reads
// that layout (even if a test has since capped the ISA), or, per shape and
// n, the AMX kernel, which reads it too and gives the same bits
// (kernels/matmul_unit.h).
const MatmulBackend& backend_for(const WeightView& w, int64_t n) {
  if (w.layout == WeightLayout::kTiled16) {
    // Q4_K/Q6_K are packed only where the VNNI kernel alone runs them.
    if (avx512_kquant::tiled_supports(w.type)) return kAvx512KQuantBackend;
    return matmul_unit_for(w, n) == MatmulUnit::kAmx ? kAmxQuantBackend : kAvx512QuantBackend;
  }
  const DType type = w.type;
  const KernelIsa isa = kernel_isa();
  if (isa == KernelIsa::kAvx512Vnni) {
    if (avx512::matmul_supports(type)) return kAvx512QuantBackend;
    if (avx512_kquant::matmul_supports(type)) {
      // Q4_K/Q6_K: per shape and n, AMX or VNNI (same bits).
      return matmul_unit_for(w, n) == MatmulUnit::kAmx ? kAmxKQuantBackend : kAvx512KQuantBackend;
    }
    if (avx512_float::matmul_supports(type)) {
      // F16/BF16: one unit per shape for every n (the two differ in fp32
      // rounding), see kernels/matmul_unit.h.
      return matmul_unit_for(w, n) == MatmulUnit::kAmx ? kAmxFloatBackend : kAvx512FloatBackend;
    }
  }
  if (kernel_isa_has_avx2(isa) && avx2::matmul_supports(type)) return kAvx2Backend;
  return kScalarBackend;
}

// x's rows encoded for backend be and weight w (x itself for fp32
// activations), in this thread's scratch.
const uint8_t* encode_activations(const MatmulBackend& be, const WeightView& w, const float* x,
                                  int64_t n, size_t x_row_bytes, ThreadPool& pool) {
  if (vec_dot::activation_type(w.type) == DType::kF32) return reinterpret_cast<const uint8_t*>(x);
  uint8_t* scratch = activation_scratch(x_row_bytes * static_cast<size_t>(n));
  auto encode = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      be.encode_activation_row(w.type, x + t * w.cols, w.cols, scratch + t * x_row_bytes);
    }
  };
  if (n < kParallelEncodeRows || pool.num_threads() == 1) {
    encode(0, n);
  } else {
    pool.run([&](int ith, int nth) {
      int64_t begin, end;
      split_range(n, ith, nth, &begin, &end);
      encode(begin, end);
    });
  }
  return scratch;
}

// Every row of every target, on the pool's threads: each thread one equal
// share of each target, or chunks of the targets' rows taken in turn (row
// tiles numbered target after target) as threads ask. A row's outputs do not
// depend on which thread or chunk computes it.
void run_targets(const MatmulBackend& be, std::span<const MatmulTarget> targets,
                 const uint8_t* x_enc, size_t x_row_bytes, int64_t n, ThreadPool& pool) {
  const int64_t tile = be.row_share;
  if (!be.chunked || n < kChunkedMinTokens || pool.num_threads() == 1) {
    pool.run([&](int ith, int nth) {
      for (const MatmulTarget& t : targets) {
        int64_t begin, end;
        split_range_in_tiles(t.w->rows, tile, ith, nth, &begin, &end);
        be.matmul_rows(*t.w, x_enc, x_row_bytes, n, t.y, begin, end);
      }
    });
    return;
  }
  int64_t tiles = 0;
  for (const MatmulTarget& t : targets) tiles += (t.w->rows + tile - 1) / tile;
  ChunkClaims claims(tiles, pool.num_threads());
  pool.run([&](int, int) {
    int64_t begin, end;
    while (claims.claim(&begin, &end)) {
      int64_t first = 0;  // the current target's first tile
      for (const MatmulTarget& t : targets) {
        const int64_t t_tiles = (t.w->rows + tile - 1) / tile;
        const int64_t b = std::max(begin, first) - first;
        const int64_t e = std::min(end, first + t_tiles) - first;
        if (b < e) {
          be.matmul_rows(*t.w, x_enc, x_row_bytes, n, t.y, b * tile, std::min(t.w->rows, e * tile));
        }
        first += t_tiles;
      }
    }
  });
}

}  // namespace

void matmul(const WeightView& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
  if (n <= 0 || w.rows <= 0) return;
  const MatmulBackend& be = backend_for(w, n);
  const size_t x_row_bytes = be.activation_row_bytes(w.type, w.cols);
  const uint8_t* x_enc = encode_activations(be, w, x, n, x_row_bytes, pool);
  const MatmulTarget target{&w, y};
  run_targets(be, std::span<const MatmulTarget>(&target, 1), x_enc, x_row_bytes, n, pool);
}

void matmul_group(std::initializer_list<MatmulTarget> targets, const float* x, int64_t n,
                  ThreadPool& pool) {
  if (n <= 0 || targets.size() == 0) return;
  const WeightView& first = *targets.begin()->w;
  const MatmulBackend& be = backend_for(first, n);
  bool shared = true;
  for (const MatmulTarget& t : targets) {
    assert(t.w->cols == first.cols && "matmul_group: the targets read one input");
    shared = shared && t.w->type == first.type && &backend_for(*t.w, n) == &be;
  }
  if (!shared) {
    for (const MatmulTarget& t : targets) matmul(*t.w, x, n, t.y, pool);
    return;
  }
  const size_t x_row_bytes = be.activation_row_bytes(first.type, first.cols);
  const uint8_t* x_enc = encode_activations(be, first, x, n, x_row_bytes, pool);
  run_targets(be, std::span<const MatmulTarget>(targets.begin(), targets.size()), x_enc,
              x_row_bytes, n, pool);
}

void matmul_reference(const WeightView& w, const float* x, int64_t n, float* y) {
  const size_t x_row_bytes = vec_dot::activation_row_bytes(w.type, w.cols);
  std::vector<uint8_t> x_enc(x_row_bytes);
  const auto* wd = static_cast<const uint8_t*>(w.data);
  for (int64_t t = 0; t < n; ++t) {
    vec_dot::encode_activation_row(w.type, x + t * w.cols, w.cols, x_enc.data());
    for (int64_t r = 0; r < w.rows; ++r) {
      y[t * w.rows + r] =
          vec_dot::dot_ref(w.type, wd + static_cast<size_t>(r) * w.row_bytes, x_enc.data(), w.cols);
    }
  }
}

}  // namespace strata
