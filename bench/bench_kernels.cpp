// Kernel microbenchmarks at TinyLlama-1.1B shapes (hidden 2048, FFN 5632,
// 22 layers, vocab 32000, 32 query / 4 KV heads of 64).
//
//   GEMV (n=1): memory-bound; counter bytes_per_second = weight bytes / time.
//   GEMM (n=512): compute-bound; counter FLOPS = 2*rows*cols*n / time.
//   ModelStep/<type>/<n>: every matmul of the whole model (22 layers + output)
//     with distinct weights, so the decode figure includes DRAM traffic;
//     counter tok_per_s = n / time. Attention and the small ops are benched
//     separately (they are a few percent of a step at short contexts).
//
// Run: build-*/bench_kernels --benchmark_filter=... [--threads via STRATA_BENCH_THREADS]
#include <benchmark/benchmark.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "kernels/amx_support.h"
#include "kernels/attention.h"
#include "kernels/dispatch.h"
#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/matmul_avx512.h"
#include "kernels/matmul_kquant_avx512.h"
#include "kernels/matmul_unit.h"
#include "kernels/ops.h"
#include "kernels/packed_weight.h"
#include "kernels/quant.h"

namespace strata {
namespace {

int bench_threads() {
  const char* env = std::getenv("STRATA_BENCH_THREADS");
  return env ? std::max(1, std::atoi(env)) : 2;
}

ThreadPool& pool() {
  static ThreadPool p(bench_threads());
  return p;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// A weight of the given shape: 64 quantized rows repeated (quantizing the
// full matrix would dominate start-up; the bytes moved are the same).
struct BenchWeight {
  std::vector<uint8_t> bytes;
  WeightView view;  // as a model loads it: packed where this CPU's kernel repacks
  WeightView gguf_view;
  std::unique_ptr<PackedWeight> packed;
};

std::unique_ptr<BenchWeight> make_weight(DType t, int64_t rows, int64_t cols, uint32_t seed) {
  constexpr int64_t kDistinctRows = 64;
  const auto src = random_floats(kDistinctRows * cols, seed, 0.02f);
  const auto tile = quantize_rows(t, src.data(), kDistinctRows, cols);
  auto w = std::make_unique<BenchWeight>();
  const size_t row_bytes = dtype_row_bytes(t, cols);
  w->bytes.resize(row_bytes * rows);
  for (int64_t r = 0; r < rows; r += kDistinctRows) {
    const int64_t n = std::min(kDistinctRows, rows - r);
    std::memcpy(w->bytes.data() + r * row_bytes, tile.data(), n * row_bytes);
  }
  w->view = {t, rows, cols, w->bytes.data(), row_bytes};
  w->gguf_view = w->view;
  w->packed = PackedWeight::pack(w->view);
  if (w->packed != nullptr) w->view = w->packed->view();
  return w;
}

const DType kBenchTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                             DType::kQ4_0, DType::kQ4_K, DType::kQ6_K};

void BM_Matmul(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), n = state.range(3);
  auto w = make_weight(type, rows, cols, 1);
  const auto x = random_floats(n * cols, 2);
  std::vector<float> y(n * rows);
  for (auto _ : state) {
    matmul(w->view, x.data(), n, y.data(), pool());
    benchmark::DoNotOptimize(y.data());
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["bytes_per_second"] =
      benchmark::Counter(iters * static_cast<double>(w->bytes.size()), benchmark::Counter::kIsRate);
  state.counters["FLOPS"] =
      benchmark::Counter(iters * 2.0 * rows * cols * n, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(type)) + " " + kernel_isa_name(kernel_isa()));
}

void matmul_args(benchmark::internal::Benchmark* b) {
  const int64_t shapes[][2] = {{2048, 2048}, {5632, 2048}, {2048, 5632}, {32000, 2048}};
  for (DType t : kBenchTypes) {
    for (auto& s : shapes) {
      for (int64_t n : {1, 512}) {
        if (n == 512 && s[0] == 32000) continue;  // output projection runs on sampled rows only
        b->Args({static_cast<int64_t>(t), s[0], s[1], n});
      }
    }
  }
  // The bundled demo model's (F16, hidden 256) FFN gate+up and output
  // projection, decoding 1 token, verifying 4 drafts, and the batches of
  // 16 streams with and without drafts: rows short enough that each
  // output's horizontal sum weighs next to its FMAs.
  for (const auto& s : {std::pair<int64_t, int64_t>{1408, 256}, {4096, 256}}) {
    for (int64_t n : {1, 5, 12, 13, 16, 32, 80}) {
      b->Args({static_cast<int64_t>(DType::kF16), s.first, s.second, n});
    }
  }
  // The 1.1B F16 FFN gate+up across the token counts of batched decode,
  // verify steps and prefill chunks (wide F16 rows stay on the few-token
  // path at every n; see kWideCols in matmul_float_avx512.cpp).
  for (int64_t n : {4, 6, 12, 13, 16, 24, 32, 64, 128, 256}) {
    b->Args({static_cast<int64_t>(DType::kF16), 5632, 2048, n});
  }
  b->ArgNames({"type", "rows", "cols", "n"})->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_Matmul)->Apply(matmul_args);

// AMX vs VNNI side by side on the same weight (Q8_0/Q4_0 packed, Q4_K/Q6_K
// and F16/BF16 in the GGUF layout; unit 0 =
// VNNI (AVX-512 for F16/BF16), 1 = AMX forced; the int8 pairs give the same
// bits, F16/BF16 agree to fp32 rounding). Skipped without AMX.
// Counter GOPS = 2 * rows * cols * n / time; time as in BM_ModelStepUnit.
void BM_MatmulUnit(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t rows = state.range(1), cols = state.range(2), n = state.range(3);
  const bool amx = state.range(4) != 0;
  if (!amx_support().usable()) {
    state.SkipWithError(amx_support().reason());
    return;
  }
  auto w = make_weight(type, rows, cols, 1);
  const auto x = random_floats(n * cols, 2);
  std::vector<float> y(n * rows);
  const bool cpu_time = pool().num_threads() == 1;  // see BM_ModelStepUnit
  const AmxMode previous = amx_mode();
  set_amx_mode(amx ? AmxMode::kForced : AmxMode::kOff);
  for (auto _ : state) {
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    const auto w0 = std::chrono::steady_clock::now();
    matmul(w->view, x.data(), n, y.data(), pool());
    const auto w1 = std::chrono::steady_clock::now();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    benchmark::DoNotOptimize(y.data());
    state.SetIterationTime(cpu_time ? (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)
                                    : std::chrono::duration<double>(w1 - w0).count());
  }
  set_amx_mode(previous);
  const double iters = static_cast<double>(state.iterations());
  state.counters["GOPS"] =
      benchmark::Counter(iters * 2e-9 * rows * cols * n, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(type)) + (amx ? " amx" : " vnni") +
                 (cpu_time ? " (thread cpu time)" : " (wall time)"));
}
BENCHMARK(BM_MatmulUnit)
    ->ArgsProduct({{static_cast<int64_t>(DType::kQ8_0), static_cast<int64_t>(DType::kQ4_0),
                    static_cast<int64_t>(DType::kQ4_K), static_cast<int64_t>(DType::kQ6_K),
                    static_cast<int64_t>(DType::kF16), static_cast<int64_t>(DType::kBF16)},
                   {512, 2048, 5632},
                   {2048},
                   {16, 32, 128, 512},
                   {0, 1}})
    ->Args({static_cast<int64_t>(DType::kQ8_0), 2048, 5632, 512, 0})
    ->Args({static_cast<int64_t>(DType::kQ8_0), 2048, 5632, 512, 1})
    ->Args({static_cast<int64_t>(DType::kQ4_0), 2048, 5632, 512, 0})
    ->Args({static_cast<int64_t>(DType::kQ4_0), 2048, 5632, 512, 1})
    ->Args({static_cast<int64_t>(DType::kQ4_K), 2048, 5632, 512, 0})
    ->Args({static_cast<int64_t>(DType::kQ4_K), 2048, 5632, 512, 1})
    ->Args({static_cast<int64_t>(DType::kQ6_K), 2048, 5632, 512, 0})
    ->Args({static_cast<int64_t>(DType::kQ6_K), 2048, 5632, 512, 1})
    ->ArgNames({"type", "rows", "cols", "n", "amx"})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// Every matmul of a TinyLlama-1.1B forward pass over n tokens (n = 5: a
// speculative verification of 4 drafts); layout 1 = as a model loads (packed
// where this CPU repacks), 0 = the GGUF layout, side by side in one run.
void BM_ModelStep(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const int64_t n = state.range(1);
  const bool as_loaded = state.range(2) != 0;
  constexpr int kLayers = 22;
  constexpr int64_t kHidden = 2048, kFfn = 5632, kKv = 256, kVocab = 32000;
  struct Layer {
    std::unique_ptr<BenchWeight> q, k, v, o, gate, up, down;
  };
  std::vector<Layer> layers(kLayers);
  uint32_t seed = 10;
  for (auto& l : layers) {
    l.q = make_weight(type, kHidden, kHidden, seed++);
    l.k = make_weight(type, kKv, kHidden, seed++);
    l.v = make_weight(type, kKv, kHidden, seed++);
    l.o = make_weight(type, kHidden, kHidden, seed++);
    l.gate = make_weight(type, kFfn, kHidden, seed++);
    l.up = make_weight(type, kFfn, kHidden, seed++);
    l.down = make_weight(type, kHidden, kFfn, seed++);
  }
  auto out = make_weight(type, kVocab, kHidden, seed++);
  const auto x = random_floats(n * kFfn, 3);
  std::vector<float> y(n * kFfn), logits(kVocab);
  size_t total_bytes = out->bytes.size();
  for (auto& l : layers) {
    for (auto* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down})
      total_bytes += (*w)->bytes.size();
  }
  for (auto _ : state) {
    for (auto& l : layers) {
      for (auto* w : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) {
        matmul(as_loaded ? (*w)->view : (*w)->gguf_view, x.data(), n, y.data(), pool());
      }
    }
    matmul(as_loaded ? out->view : out->gguf_view, x.data(), 1, logits.data(),
           pool());  // logits for the last token only
    benchmark::DoNotOptimize(logits.data());
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["tok_per_s"] = benchmark::Counter(iters * n, benchmark::Counter::kIsRate);
  state.counters["bytes_per_second"] =
      benchmark::Counter(iters * static_cast<double>(total_bytes), benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(type)) + " " + kernel_isa_name(kernel_isa()));
}
BENCHMARK(BM_ModelStep)
    ->ArgsProduct({{static_cast<int64_t>(DType::kF16), static_cast<int64_t>(DType::kQ8_0),
                    static_cast<int64_t>(DType::kQ4_0), static_cast<int64_t>(DType::kQ4_K),
                    static_cast<int64_t>(DType::kQ6_K)},
                   {1, 5, 8, 24, 32, 512},
                   {1, 0}})
    ->ArgNames({"type", "n", "layout"})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Every layer matmul of a TinyLlama-1.1B forward pass over n tokens (22
// layers; the output projection, which runs on one row in prefill, left
// out), packed as a model loads, on VNNI (amx:0) or AMX (amx:1), the two
// side by side in one run. On a shared machine, wall time measures the
// neighbours too: with STRATA_BENCH_THREADS=1 the time is this thread's CPU
// time (the pool of one runs on it), which they do not inflate.
//
// type kQ4KMix: the Q4_K_M mix as strata-mkmodel writes it (Q4_K, with Q6_K
// attn_v / ffn_down in the first and last eighth of the layers and every
// third layer between).
constexpr int64_t kQ4KMix = 100;

bool q4_k_m_wants_q6_k(int layer, int num_layers) {
  const int eighth = num_layers / 8;
  return layer < eighth || layer >= 7 * num_layers / 8 || (layer - eighth) % 3 == 2;
}

// The 1.1B layer shapes {rows, cols} in order q, k, v, o, gate, up, down.
const std::pair<int64_t, int64_t> kLayerShapes[] = {
    {2048, 2048}, {256, 2048}, {256, 2048}, {2048, 2048}, {5632, 2048}, {5632, 2048}, {2048, 5632}};

DType layer_weight_type(int64_t type_arg, int layer, int num_layers, int which) {
  if (type_arg != kQ4KMix) return static_cast<DType>(type_arg);
  const bool v_or_down = which == 2 || which == 6;
  return v_or_down && q4_k_m_wants_q6_k(layer, num_layers) ? DType::kQ6_K : DType::kQ4_K;
}

void BM_ModelStepUnit(benchmark::State& state) {
  const int64_t type_arg = state.range(0);
  const int64_t n = state.range(1);
  const bool amx = state.range(2) != 0;
  if (!amx_support().usable()) {
    state.SkipWithError(amx_support().reason());
    return;
  }
  constexpr int kLayers = 22;
  constexpr int64_t kFfn = 5632;
  std::vector<std::unique_ptr<BenchWeight>> weights;
  uint32_t seed = 10;
  for (int l = 0; l < kLayers; ++l) {
    for (int i = 0; i < 7; ++i) {
      const auto [rows, cols] = kLayerShapes[i];
      weights.push_back(
          make_weight(layer_weight_type(type_arg, l, kLayers, i), rows, cols, seed++));
    }
  }
  const auto x = random_floats(n * kFfn, 3);
  std::vector<float> y(n * kFfn);
  const bool cpu_time = pool().num_threads() == 1;
  const AmxMode previous = amx_mode();
  set_amx_mode(amx ? AmxMode::kForced : AmxMode::kOff);
  for (auto _ : state) {
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    const auto w0 = std::chrono::steady_clock::now();
    for (const auto& w : weights) matmul(w->view, x.data(), n, y.data(), pool());
    const auto w1 = std::chrono::steady_clock::now();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    benchmark::DoNotOptimize(y.data());
    state.SetIterationTime(cpu_time ? (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)
                                    : std::chrono::duration<double>(w1 - w0).count());
  }
  set_amx_mode(previous);
  const double iters = static_cast<double>(state.iterations());
  state.counters["tok_per_s"] = benchmark::Counter(iters * n, benchmark::Counter::kIsRate);
  const std::string name =
      type_arg == kQ4KMix ? "q4_K_M" : std::string(dtype_name(static_cast<DType>(type_arg)));
  state.SetLabel(name + (amx ? " amx" : " vnni") +
                 (cpu_time ? " (thread cpu time)" : " (wall time)"));
}
BENCHMARK(BM_ModelStepUnit)
    ->ArgsProduct({{static_cast<int64_t>(DType::kQ8_0), static_cast<int64_t>(DType::kQ4_0),
                    kQ4KMix},
                   {1, 8, 32, 128, 512},
                   {0, 1}})
    ->ArgNames({"type", "n", "amx"})
    ->Unit(benchmark::kMillisecond)
    ->UseManualTime();

// The unit the start-up calibration (kernels/matmul_unit.h) picks for each
// 1.1B layer shape of a weight type, at the scheduler's token counts: the
// label is matmul_unit_summary(), the start-up log's lines, joined by " | ".
// Timed: one calibration of the seven shapes.
void BM_MatmulUnitChoice(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  if (!amx_support().usable()) {
    state.SkipWithError(amx_support().reason());
    return;
  }
  std::vector<std::unique_ptr<BenchWeight>> weights;
  std::vector<WeightView> views;
  for (const auto& [rows, cols] : kLayerShapes) {
    weights.push_back(make_weight(type, rows, cols, 5));
    views.push_back(weights.back()->view);
  }
  const AmxMode previous = amx_mode();
  set_amx_mode(AmxMode::kMeasured);
  for (auto _ : state) {
    clear_matmul_unit_choices();
    benchmark::DoNotOptimize(calibrate_matmul_units(views));
  }
  std::string label;
  for (const std::string& line : matmul_unit_summary())
    label += (label.empty() ? "" : " | ") + line;
  clear_matmul_unit_choices();
  set_amx_mode(previous);
  state.SetLabel(label);
}
BENCHMARK(BM_MatmulUnitChoice)
    ->Args({static_cast<int64_t>(DType::kQ8_0)})
    ->Args({static_cast<int64_t>(DType::kQ4_0)})
    ->Args({static_cast<int64_t>(DType::kQ4_K)})
    ->Args({static_cast<int64_t>(DType::kQ6_K)})
    ->ArgNames({"type"})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Paged attention at TinyLlama shapes (32 query / 4 KV heads of 64, blocks
// of 16). Args: ctx = context of the chunk's sequence, n = tokens of that
// sequence in the batch (its last n positions: a decode for 1, a prefill
// chunk or a whole prompt otherwise), decodes = extra decode tokens of other
// sequences at context 100 placed first in the batch (a mixed step),
// layers = KV layers walked per iteration, hp = 1 to ask for transparent
// huge pages on the KV buffers (madvise; KvStorage does not today).
// layers = 1: one K/V buffer, physical blocks handed out backwards (the
// whole context stays in L2/L3 between iterations). layers > 1: the
// engine's pattern: that many separate K/V buffers, each a pool twice the
// needed size whose blocks are handed out in a random order, one
// paged_attention call per layer per iteration (K/V come from DRAM).
// Counters: GFLOPS = 4 * n_heads * head_dim * positions attended (over all
// tokens and layers) / time; kv_bytes_per_second = fp16 K+V bytes read per
// token once. E.g. --benchmark_filter='BM_PagedAttention/.*layers:22'.

// One K or V buffer of n fp16 elements filled with src repeated; with
// huge_pages, 2 MiB-aligned and advised MADV_HUGEPAGE before the first touch.
struct FreeDeleter {
  void operator()(uint16_t* p) const { std::free(p); }
};
std::unique_ptr<uint16_t, FreeDeleter> kv_buffer(size_t n, bool huge_pages,
                                                 const std::vector<uint16_t>& src) {
  constexpr size_t kHugePage = size_t{2} << 20;
  const size_t bytes = (n * sizeof(uint16_t) + kHugePage - 1) / kHugePage * kHugePage;
  auto* b = static_cast<uint16_t*>(std::aligned_alloc(huge_pages ? kHugePage : 4096, bytes));
#ifdef MADV_HUGEPAGE
  if (huge_pages) madvise(b, bytes, MADV_HUGEPAGE);
#endif
  for (size_t i = 0; i < n; i += src.size()) {
    std::memcpy(b + i, src.data(), std::min(src.size(), n - i) * sizeof(uint16_t));
  }
  return std::unique_ptr<uint16_t, FreeDeleter>(b);
}

void BM_PagedAttention(benchmark::State& state) {
  const int n_heads = 32, n_kv = 4, hd = 64, bs = 16;
  const int64_t ctx = state.range(0), n_chunk = state.range(1), n_decodes = state.range(2);
  const int n_layers = static_cast<int>(state.range(3));
  const bool huge_pages = state.range(4) != 0;
  constexpr int64_t kDecodeCtx = 100;
  const int64_t chunk_blocks = (ctx + bs - 1) / bs, decode_blocks = (kDecodeCtx + bs - 1) / bs;
  const int64_t used_blocks = chunk_blocks + n_decodes * decode_blocks;
  const int64_t n_blocks = n_layers == 1 ? used_blocks + 1 : 2 * used_blocks;
  // Physical block ids in the order they are handed out.
  std::vector<int32_t> order(n_blocks);
  for (int64_t i = 0; i < n_blocks; ++i) order[i] = static_cast<int32_t>(n_blocks - 1 - i);
  if (n_layers > 1) std::shuffle(order.begin(), order.end(), std::mt19937(11));
  int64_t next_block = 0;
  std::vector<std::vector<int32_t>> tables(n_decodes + 1);
  for (int64_t s = 0; s <= n_decodes; ++s) {
    const int64_t blocks = s < n_decodes ? decode_blocks : chunk_blocks;
    for (int64_t i = 0; i < blocks; ++i) tables[s].push_back(order[next_block++]);
  }
  // K and V of every layer: the same random fp16 pattern (one distinct
  // pool's worth at most 1 << 20 elements, repeated).
  const size_t pool_elems = static_cast<size_t>(n_blocks) * bs * n_kv * hd;
  const auto kv_src = random_floats(std::min<size_t>(pool_elems, size_t{1} << 20), 4);
  std::vector<uint16_t> kv_half(kv_src.size());
  for (size_t i = 0; i < kv_src.size(); ++i) kv_half[i] = fp32_to_fp16(kv_src[i]);
  std::vector<std::unique_ptr<uint16_t, FreeDeleter>> k, v;
  std::vector<KvLayerView> views;
  for (int il = 0; il < n_layers; ++il) {
    k.push_back(kv_buffer(pool_elems, huge_pages, kv_half));
    v.push_back(kv_buffer(pool_elems, huge_pages, kv_half));
    views.push_back(KvLayerView{k.back().get(), v.back().get(), n_blocks, bs, n_kv, hd});
  }
  std::vector<const int32_t*> table_ptrs;
  for (auto& t : tables) table_ptrs.push_back(t.data());
  std::vector<int32_t> pos, seq;
  for (int64_t s = 0; s < n_decodes; ++s) {
    pos.push_back(static_cast<int32_t>(kDecodeCtx - 1));
    seq.push_back(static_cast<int32_t>(s));
  }
  for (int64_t t = 0; t < n_chunk; ++t) {
    pos.push_back(static_cast<int32_t>(ctx - n_chunk + t));
    seq.push_back(static_cast<int32_t>(n_decodes));
  }
  const int64_t n_tokens = static_cast<int64_t>(pos.size());
  double positions = 0;
  for (int32_t p : pos) positions += p + 1;
  positions *= n_layers;
  AttentionBatch batch{n_tokens, pos.data(), seq.data(), table_ptrs.data()};
  const auto q = random_floats(n_tokens * n_heads * hd, 5);
  std::vector<float> out(q.size());
  for (auto _ : state) {
    for (const KvLayerView& view : views) {
      paged_attention(q.data(), view, batch, n_heads, 0.125f, out.data(), pool());
    }
    benchmark::DoNotOptimize(out.data());
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GFLOPS"] = benchmark::Counter(iters * 4.0 * n_heads * hd * positions * 1e-9,
                                                benchmark::Counter::kIsRate);
  state.counters["kv_bytes_per_second"] =
      benchmark::Counter(iters * positions * n_kv * hd * 2 * 2, benchmark::Counter::kIsRate);
  state.SetLabel(kernel_isa_name(kernel_isa()));
}
BENCHMARK(BM_PagedAttention)
    ->ArgNames({"ctx", "n", "decodes", "layers", "hp"})
    ->Args({512, 1, 0, 1, 0})
    ->Args({2048, 1, 0, 1, 0})
    ->Args({512, 512, 0, 1, 0})
    ->Args({4000, 16, 0, 1, 0})
    ->Args({4000, 32, 0, 1, 0})
    ->Args({4000, 16, 8, 1, 0})
    ->Args({3000, 8, 8, 1, 0})
    ->Args({4000, 1, 0, 1, 0})
    ->Args({4000, 16, 8, 22, 0})
    ->Args({3000, 8, 8, 22, 0})
    ->Args({4000, 16, 8, 22, 1})
    ->Args({3000, 8, 8, 22, 1})
    ->Args({100, 1, 63, 1, 0})
    ->Args({100, 1, 63, 22, 0})
    ->Args({2048, 1, 0, 22, 0})
    ->Args({4000, 1, 0, 22, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A prompt's activations encoded for a quantized matmul on one thread, as
// the VNNI kernels take them (Q8_0 blocks plus their sums for Q4_0/Q8_0
// weights, Q8_K for Q4_K/Q6_K): 512 tokens x 2048 columns, the input of a
// 1.1B layer's q/k/v and gate/up. Bytes: the fp32 rows read, the blocks
// written.
void BM_EncodeActivations(benchmark::State& state) {
  if (kernel_isa() != KernelIsa::kAvx512Vnni) {
    state.SkipWithError("needs AVX-512 VNNI (the kernels whose encoding this times)");
    return;
  }
  const auto type = static_cast<DType>(state.range(0));
  const int64_t n = state.range(1), cols = 2048;
  const bool kquant = type == DType::kQ4_K || type == DType::kQ6_K;
  const size_t row_bytes = kquant ? avx512_kquant::activation_row_bytes(type, cols)
                                  : avx512::activation_row_bytes(type, cols);
  const auto x = random_floats(n * cols, 11);
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(n));
  for (auto _ : state) {
    for (int64_t t = 0; t < n; ++t) {
      void* dst = out.data() + static_cast<size_t>(t) * row_bytes;
      if (kquant) {
        avx512_kquant::encode_activation_row(type, x.data() + t * cols, cols, dst);
      } else {
        avx512::encode_activation_row(type, x.data() + t * cols, cols, dst);
      }
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["bytes_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n * (cols * 4 + static_cast<double>(row_bytes)),
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(dtype_name(type)));
}
BENCHMARK(BM_EncodeActivations)
    ->ArgNames({"type", "n"})
    ->Args({static_cast<int>(DType::kQ4_0), 512})
    ->Args({static_cast<int>(DType::kQ4_K), 512})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void BM_RmsNorm(benchmark::State& state) {
  const int64_t n = state.range(0);
  const auto x = random_floats(n * 2048, 6);
  const auto w = random_floats(2048, 7);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    rms_norm(x.data(), w.data(), y.data(), n, 2048, 1e-5f);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["bytes_per_second"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * n * 2048 * 8, benchmark::Counter::kIsRate);
}
BENCHMARK(BM_RmsNorm)->Arg(1)->Arg(512)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Rope(benchmark::State& state) {
  const int64_t n = state.range(0);
  auto x = random_floats(n * 32 * 64, 8);
  std::vector<int32_t> pos(n);
  for (int64_t i = 0; i < n; ++i) pos[i] = static_cast<int32_t>(i);
  RopeParams p{static_cast<RopeStyle>(state.range(1)), 64, 64, 10000.0f, 1.0f};
  for (auto _ : state) {
    rope(x.data(), pos.data(), n, 32, p);
    benchmark::DoNotOptimize(x.data());
  }
}
BENCHMARK(BM_Rope)->Args({1, 0})->Args({512, 0})->Args({512, 1})->Unit(benchmark::kMicrosecond);

void BM_SiluMul(benchmark::State& state) {
  const int64_t n = state.range(0) * 5632;
  const auto g = random_floats(n, 9), u = random_floats(n, 10);
  std::vector<float> out(n);
  for (auto _ : state) {
    silu_mul(g.data(), u.data(), out.data(), n);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_SiluMul)->Arg(1)->Arg(512)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace strata

int main(int argc, char** argv) {
  // STRATA_BENCH_ISA=scalar forces the reference kernels for a side-by-side run.
  // STRATA_BENCH_ISA=avx2 forces the AVX2 kernels on an AVX-512 VNNI CPU.
  if (const char* isa = std::getenv("STRATA_BENCH_ISA"); isa && std::strcmp(isa, "scalar") == 0) {
    strata::set_kernel_isa(strata::KernelIsa::kScalar);
  } else if (isa && std::strcmp(isa, "avx2") == 0) {
    strata::set_kernel_isa(strata::KernelIsa::kAvx2);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
