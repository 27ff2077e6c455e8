// `strata bench forward`: single-stream prefill and decode speed, the same
// workload scripts/bench_llamacpp.mjs gives llama.cpp: a P-token prompt of
// pseudo-random ids, then G decode steps; medians over R runs. Also prints the
// floors of this model on this machine (kernels/roofline.h, measured first):
// decode = weight bytes read per token over the read bandwidth
// (STRATA_MEM_BW_GBS overrides the measurement); prefill = matmul and
// attention FLOPs per token over the peak rate of the kernels' arithmetic
// (int8 dot products for quantized weights, fp32 FMA for float ones).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/single_sequence.h"
#include "kernels/dispatch.h"
#include "kernels/roofline.h"
#include "model/model_weights.h"
#include "runtime/forward_profile.h"

namespace strata::cli {
namespace {

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

size_t weight_bytes_per_token(const ModelWeights& w) {
  size_t bytes = w.output().row_bytes * w.output().rows;
  for (const LayerWeights& l : w.layers()) {
    for (const WeightView* v :
         {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) {
      bytes += v->row_bytes * v->rows;
    }
  }
  return bytes;
}

// Seconds of pure arithmetic per prompt token at the given peaks: every
// layer matmul (2 FLOPs per weight) plus causal attention at the prompt's
// mean context (QK and PV: 4 FLOPs per head dim per position).
double prefill_seconds_per_token(const ModelWeights& w, int64_t prompt, double fp32_flops,
                                 double int8_ops) {
  double s = 0.0;
  for (const LayerWeights& l : w.layers()) {
    for (const WeightView* v :
         {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) {
      const double ops = 2.0 * static_cast<double>(v->rows) * static_cast<double>(v->cols);
      s += ops / (uses_int8_dot(v->type) ? int8_ops : fp32_flops);
    }
  }
  const ModelConfig& c = w.config();
  const double attn = 4.0 * c.num_layers * static_cast<double>(c.num_heads) * c.head_dim *
                      (static_cast<double>(prompt) + 1.0) / 2.0;
  return s + attn / fp32_flops;
}

// The bound that sets most of a phase's floor (compute or memory).
RooflineBound dominant_bound(const ForwardProfileTotals& t, ForwardPhase p) {
  const PhaseTotals& c = t.at(p, RooflineBound::kCompute);
  const PhaseTotals& m = t.at(p, RooflineBound::kMemory);
  if (c.calls == 0 && m.calls == 0) return RooflineBound::kNone;
  return c.floor_seconds >= m.floor_seconds && c.calls > 0 ? RooflineBound::kCompute
                                                           : RooflineBound::kMemory;
}

// Per phase, per run: time, its share, what it achieved (GOP/s where
// compute sets its floor, GB/s where memory does), the floor and the
// fraction of the ceiling reached (floor / time).
void print_phases(const std::string& title, const ForwardProfileTotals& t, int reps) {
  const PhaseTotals all = t.total();
  if (all.calls == 0) return;
  std::printf("%s per phase (ms per run; floor = max(ops / peak, bytes / bandwidth)):\n",
              title.c_str());
  std::printf("  %-13s %9s %6s %14s %9s %8s  %s\n", "phase", "ms", "share", "achieved", "floor ms",
              "of ceil", "bound");
  for (int i = 0; i < kNumForwardPhases; ++i) {
    const ForwardPhase p = static_cast<ForwardPhase>(i);
    const PhaseTotals pt = t.phase(p);
    if (pt.calls == 0) continue;
    const RooflineBound bound = dominant_bound(t, p);
    char achieved[32] = "-";
    if (pt.seconds > 0 && bound == RooflineBound::kCompute) {
      std::snprintf(achieved, sizeof(achieved), "%.0f GOP/s", pt.ops / pt.seconds / 1e9);
    } else if (pt.seconds > 0 && bound == RooflineBound::kMemory) {
      std::snprintf(achieved, sizeof(achieved), "%.1f GB/s", pt.bytes / pt.seconds / 1e9);
    }
    char of_ceiling[16] = "-";
    if (pt.floor_seconds > 0 && pt.seconds > 0) {
      std::snprintf(of_ceiling, sizeof(of_ceiling), "%.1f%%",
                    100.0 * pt.floor_seconds / pt.seconds);
    }
    std::printf("  %-13s %9.2f %5.1f%% %14s %9.2f %8s  %s\n", forward_phase_name(p),
                1e3 * pt.seconds / reps, 100.0 * pt.seconds / all.seconds, achieved,
                1e3 * pt.floor_seconds / reps, of_ceiling, roofline_bound_name(bound));
  }
  std::printf("  %-13s %9.2f %5.1f%% %14s %9.2f %7.1f%%\n", "total", 1e3 * all.seconds / reps,
              100.0, "", 1e3 * all.floor_seconds / reps,
              all.seconds > 0 ? 100.0 * all.floor_seconds / all.seconds : 0.0);
}

std::string phases_json(const ForwardProfileTotals& t, int reps) {
  std::string out = "[";
  for (int i = 0; i < kNumForwardPhases; ++i) {
    const ForwardPhase p = static_cast<ForwardPhase>(i);
    const PhaseTotals pt = t.phase(p);
    if (pt.calls == 0) continue;
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "%s{\"phase\":\"%s\",\"bound\":\"%s\",\"ms\":%.3f,\"floor_ms\":%.3f,"
                  "\"gops\":%.3f,\"gbytes\":%.4f}",
                  out.size() > 1 ? "," : "", forward_phase_name(p),
                  roofline_bound_name(dominant_bound(t, p)), 1e3 * pt.seconds / reps,
                  1e3 * pt.floor_seconds / reps, pt.ops / reps / 1e9, pt.bytes / reps / 1e9);
    out += buf;
  }
  return out + "]";
}

}  // namespace

int run_bench_forward(const BenchForwardOptions& opt) {
  const std::string path = opt.model_path.empty() ? default_model_path() : opt.model_path;
  Result<ModelWeights> weights = ModelWeights::open(path);
  if (!weights) {
    std::fprintf(stderr, "error: %s\n", weights.status().message().c_str());
    return 1;
  }
  MachineCeilings ceilings;
  {
    // Measured before the model's pool exists (two pools would compete).
    const int nth = opt.num_threads > 0
                        ? opt.num_threads
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ThreadPool pool(nth);
    ceilings = measure_machine_ceilings(pool, /*quick=*/false);
  }
  const double bw_gbs = ceilings.read_bw_gbs, fp32_gflops = ceilings.fp32_gflops,
               int8_gops = ceilings.int8_gops, amx_gops = ceilings.amx_int8_gops;
  const int64_t ctx = opt.prompt_tokens + opt.gen_tokens + 16;
  Result<std::unique_ptr<SingleSequence>> seq =
      SingleSequence::create(*weights, ctx, opt.num_threads, opt.prompt_tokens);
  if (!seq) {
    std::fprintf(stderr, "error: %s\n", seq.status().message().c_str());
    return 1;
  }
  const int64_t vocab = (*seq)->vocab_size();
  // The same LCG as scripts/bench_llamacpp.mjs: ids in [3, vocab).
  uint64_t state = 12345;
  auto next_id = [&]() {
    state = (state * 1103515245ull + 12345ull) % 2147483648ull;
    return static_cast<int32_t>(3 + (state / 2147483648.0) * (vocab - 3));
  };
  std::vector<int32_t> prompt(opt.prompt_tokens);
  for (int32_t& t : prompt) t = next_id();

  using Clock = std::chrono::steady_clock;
  std::vector<double> prefill, decode;
  (*seq)->profile().set_ceilings(ceilings);
  ForwardProfileTotals prefill_phases, decode_phases;
  for (int r = 0; r < opt.reps; ++r) {
    (*seq)->reset();
    (*seq)->profile().take();
    auto t0 = Clock::now();
    if (Status s = (*seq)->append(prompt); !s) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    prefill.push_back(opt.prompt_tokens / std::chrono::duration<double>(Clock::now() - t0).count());
    prefill_phases.add((*seq)->profile().take());
    t0 = Clock::now();
    for (int i = 0; i < opt.gen_tokens; ++i) {
      const int32_t t = next_id();
      if (Status s = (*seq)->append(std::span<const int32_t>(&t, 1)); !s) {
        std::fprintf(stderr, "error: %s\n", s.message().c_str());
        return 1;
      }
    }
    decode.push_back(opt.gen_tokens / std::chrono::duration<double>(Clock::now() - t0).count());
    decode_phases.add((*seq)->profile().take());
  }
  const double floor_tok_s = bw_gbs * 1e9 / static_cast<double>(weight_bytes_per_token(*weights));
  const double prefill_floor_tok_s =
      1.0 /
      prefill_seconds_per_token(*weights, opt.prompt_tokens, fp32_gflops * 1e9, int8_gops * 1e9);
  // With AMX, the quantized matmuls' ceiling is the tile unit's int8 rate
  // (the chooser runs them there from 16 tokens on); 0 = no such unit.
  const bool has_amx_floor = amx_gops > 0.0 && uses_int8_dot(weights->layers()[0].ffn_down.type);
  const double prefill_floor_amx_tok_s =
      has_amx_floor ? 1.0 / prefill_seconds_per_token(*weights, opt.prompt_tokens,
                                                      fp32_gflops * 1e9, amx_gops * 1e9)
                    : 0.0;
  const double pp = median(prefill), tg = median(decode);
  if (opt.json) {
    std::printf(
        "{\"engine\":\"strata\",\"isa\":\"%s\",\"prompt\":%d,\"gen\":%d,\"reps\":%d,"
        "\"prefill_tok_s\":%.3f,\"decode_tok_s\":%.3f,\"decode_floor_tok_s\":%.3f,"
        "\"prefill_floor_tok_s\":%.3f,\"mem_bw_gbs\":%.2f,\"peak_fp32_gflops\":%.1f,"
        "\"peak_int8_gops\":%.1f,\"peak_amx_int8_gops\":%.1f,\"prefill_floor_amx_tok_s\":%.3f,"
        "\"prefill_phases\":%s,\"decode_phases\":%s}\n",
        kernel_isa_name(kernel_isa()), opt.prompt_tokens, opt.gen_tokens, opt.reps, pp, tg,
        floor_tok_s, prefill_floor_tok_s, bw_gbs, fp32_gflops, int8_gops, amx_gops,
        prefill_floor_amx_tok_s, phases_json(prefill_phases, opt.reps).c_str(),
        phases_json(decode_phases, opt.reps).c_str());
  } else {
    std::printf("model: %s (kernels: %s)\n", path.c_str(), kernel_isa_name(kernel_isa()));
    std::printf("machine: read %.1f GB/s, fp32 FMA %.0f GFLOP/s, int8 dot %.0f GOP/s\n", bw_gbs,
                fp32_gflops, int8_gops);
    std::printf("prefill pp%d: %.2f tok/s (median of %d); floor %.1f tok/s (arithmetic peak)\n",
                opt.prompt_tokens, pp, opt.reps, prefill_floor_tok_s);
    if (has_amx_floor) {
      std::printf("        with the AMX tile unit (int8 %.0f GOP/s): floor %.1f tok/s\n", amx_gops,
                  prefill_floor_amx_tok_s);
    }
    std::printf("decode  tg%d: %.2f tok/s (median of %d); floor %.1f tok/s (bytes / bandwidth)\n",
                opt.gen_tokens, tg, opt.reps, floor_tok_s);
    print_phases("prefill pp" + std::to_string(opt.prompt_tokens), prefill_phases, opt.reps);
    print_phases("decode tg" + std::to_string(opt.gen_tokens), decode_phases, opt.reps);
  }
  return 0;
}

}  // namespace strata::cli
