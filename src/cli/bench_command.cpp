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
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/single_sequence.h"
#include "kernels/dispatch.h"
#include "kernels/roofline.h"
#include "model/model_weights.h"

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

bool is_int8_kernel(DType type) {
  return type == DType::kQ8_0 || type == DType::kQ4_0 || type == DType::kQ4_K ||
         type == DType::kQ6_K;
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
      s += ops / (is_int8_kernel(v->type) ? int8_ops : fp32_flops);
    }
  }
  const ModelConfig& c = w.config();
  const double attn = 4.0 * c.num_layers * static_cast<double>(c.num_heads) * c.head_dim *
                      (static_cast<double>(prompt) + 1.0) / 2.0;
  return s + attn / fp32_flops;
}

}  // namespace

int run_bench_forward(const BenchForwardOptions& opt) {
  const std::string path = opt.model_path.empty() ? default_model_path() : opt.model_path;
  Result<ModelWeights> weights = ModelWeights::open(path);
  if (!weights) {
    std::fprintf(stderr, "error: %s\n", weights.status().message().c_str());
    return 1;
  }
  double bw_gbs = 0.0, fp32_gflops = 0.0, int8_gops = 0.0, amx_gops = 0.0;
  {
    // Measured before the model's pool exists (two pools would compete).
    const int nth = opt.num_threads > 0
                        ? opt.num_threads
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    ThreadPool pool(nth);
    const char* bw_env = std::getenv("STRATA_MEM_BW_GBS");
    bw_gbs = bw_env ? std::atof(bw_env) : measure_read_bandwidth_gbs(pool);
    fp32_gflops = measure_peak_fp32_gflops(pool);
    int8_gops = measure_peak_int8_gops(pool);
    amx_gops = measure_peak_amx_int8_gops(pool);  // 0 without AMX
  }
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
  for (int r = 0; r < opt.reps; ++r) {
    (*seq)->reset();
    auto t0 = Clock::now();
    if (Status s = (*seq)->append(prompt); !s) {
      std::fprintf(stderr, "error: %s\n", s.message().c_str());
      return 1;
    }
    prefill.push_back(opt.prompt_tokens / std::chrono::duration<double>(Clock::now() - t0).count());
    t0 = Clock::now();
    for (int i = 0; i < opt.gen_tokens; ++i) {
      const int32_t t = next_id();
      if (Status s = (*seq)->append(std::span<const int32_t>(&t, 1)); !s) {
        std::fprintf(stderr, "error: %s\n", s.message().c_str());
        return 1;
      }
    }
    decode.push_back(opt.gen_tokens / std::chrono::duration<double>(Clock::now() - t0).count());
  }
  const double floor_tok_s = bw_gbs * 1e9 / static_cast<double>(weight_bytes_per_token(*weights));
  const double prefill_floor_tok_s =
      1.0 /
      prefill_seconds_per_token(*weights, opt.prompt_tokens, fp32_gflops * 1e9, int8_gops * 1e9);
  // With AMX, the quantized matmuls' ceiling is the tile unit's int8 rate
  // (the chooser runs them there from 16 tokens on); 0 = no such unit.
  const bool has_amx_floor = amx_gops > 0.0 && is_int8_kernel(weights->layers()[0].ffn_down.type);
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
        "\"peak_int8_gops\":%.1f,\"peak_amx_int8_gops\":%.1f,\"prefill_floor_amx_tok_s\":%.3f}\n",
        kernel_isa_name(kernel_isa()), opt.prompt_tokens, opt.gen_tokens, opt.reps, pp, tg,
        floor_tok_s, prefill_floor_tok_s, bw_gbs, fp32_gflops, int8_gops, amx_gops,
        prefill_floor_amx_tok_s);
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
  }
  return 0;
}

}  // namespace strata::cli
