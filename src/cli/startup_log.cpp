#include "cli/startup_log.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <thread>

#include "cli/engine_flags.h"
#include "kernels/amx_support.h"
#include "kernels/dispatch.h"
#include "kernels/matmul_unit.h"
#include "runtime/kv_storage.h"

namespace strata::cli {
namespace {

std::string printf_string(const char* format, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), format, args...);
  return buf;
}

// "12.2 MiB": bytes for people.
std::string human_bytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  return printf_string(unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
}

// "q4_k x 154, q6_k x 23": the matmul weights' types, most common first.
std::string weight_types(const ModelWeights& weights) {
  std::map<std::string, int> counts;
  auto add = [&](const WeightView& w) {
    if (w.data != nullptr) ++counts[std::string(dtype_name(w.type))];
  };
  for (const LayerWeights& l : weights.layers()) {
    for (const WeightView* w :
         {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) {
      add(*w);
    }
  }
  add(weights.token_embd());
  if (!weights.config().is_output_tied) add(weights.output());
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [type, n] : sorted) {
    if (!out.empty()) out += ", ";
    out += type + " x " + std::to_string(n);
  }
  return out;
}

}  // namespace

std::vector<std::string> startup_log_lines(const std::string& model_path,
                                           const ModelWeights& weights, const Engine& engine) {
  const ModelConfig& c = weights.config();
  const EngineOptions& o = engine.options();
  std::vector<std::string> lines;

  std::error_code ec;
  const auto file_bytes = std::filesystem::file_size(model_path, ec);
  lines.push_back(printf_string(
      "model %s (%s): %s, %d layers, hidden %lld, %d heads (%d KV) of %d, vocab %lld, trained "
      "context %lld",
      model_path.c_str(),
      ec ? "size unknown" : human_bytes(static_cast<double>(file_bytes)).c_str(),
      std::string(architecture_name(c.arch)).c_str(), c.num_layers,
      static_cast<long long>(c.hidden_dim), c.num_heads, c.num_kv_heads, c.head_dim,
      static_cast<long long>(c.vocab_size), static_cast<long long>(c.context_length)));
  lines.push_back("weights: " + weight_types(weights) + " (matmul tensors)");

  const int num_threads = o.num_threads > 0
                              ? o.num_threads
                              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  lines.push_back(printf_string("kernels: %s, %d thread%s", kernel_isa_name(kernel_isa()),
                                num_threads, num_threads == 1 ? "" : "s"));
  // AMX tiles: which unit each matmul shape runs on, as measured at load.
  if (amx_support().usable()) {
    for (const std::string& line : matmul_unit_summary()) lines.push_back(line);
  } else {
    lines.push_back(std::string("AMX: off (") + amx_support().reason() + ")");
  }

  if (o.ceilings.known()) {
    std::string amx;
    if (o.ceilings.amx_int8_gops > 0) {
      amx = printf_string(", AMX int8 %.0f GOP/s", o.ceilings.amx_int8_gops);
    }
    lines.push_back(printf_string(
        "roofline: read %.1f GB/s, fp32 FMA %.0f GFLOP/s, int8 dot %.0f GOP/s%s (measured; "
        "/metrics strata:forward_phase_floor_seconds per phase)",
        o.ceilings.read_bw_gbs, o.ceilings.fp32_gflops, o.ceilings.int8_gops, amx.c_str()));
  }

  const ParallelLayout& layout = weights.layout();
  const ModelConfig& local = weights.local_config();
  if (layout.is_parallel()) {
    lines.push_back(printf_string(
        "parallel: %d ranks, tensor %d x pipeline %d; rank 0 holds %d of %d heads (%d KV), "
        "layers %d-%d, vocabulary rows %lld-%lld; the KV pool below is per rank",
        layout.world_size(), layout.tensor_parallel_size, layout.pipeline_parallel_size,
        local.num_heads, c.num_heads, local.num_kv_heads, weights.first_layer(),
        weights.first_layer() + local.num_layers - 1, static_cast<long long>(weights.vocab_begin()),
        static_cast<long long>(weights.vocab_end() - 1)));
  }
  const int64_t num_blocks = engine.num_kv_blocks();
  const int64_t num_tokens = num_blocks * o.block_size;
  const size_t pool_bytes =
      static_cast<size_t>(num_blocks) * KvStorage::bytes_per_block(local, o.block_size);
  const std::string budget =
      o.kv_cache_memory_bytes > 0
          ? "--kv-cache-memory " + format_byte_size(o.kv_cache_memory_bytes)
          : printf_string("auto: --max-num-seqs %d x --max-model-len %lld, at most %s",
                          o.max_num_seqs, static_cast<long long>(engine.max_model_len()),
                          format_byte_size(EngineOptions::kMaxAutoKvCacheBytes).c_str());
  lines.push_back(printf_string(
      "KV cache: %lld blocks of %d tokens = %lld tokens, %s fp16 (%s)",
      static_cast<long long>(num_blocks), o.block_size, static_cast<long long>(num_tokens),
      human_bytes(static_cast<double>(pool_bytes)).c_str(), budget.c_str()));
  const int64_t max_model_len = engine.max_model_len();
  const double concurrency =
      static_cast<double>(num_tokens) / static_cast<double>(std::max<int64_t>(1, max_model_len));
  lines.push_back(printf_string(
      "maximum concurrency at --max-model-len %lld: %.2fx (of --max-num-seqs %d); prefix caching "
      "%s, policy %s",
      static_cast<long long>(max_model_len), concurrency, o.max_num_seqs,
      o.enable_prefix_caching ? "on" : "off",
      std::string(scheduling_policy_name(o.policy)).c_str()));
  if (o.speculative.enabled()) {
    lines.push_back("speculative decoding: " + o.speculative.to_json() +
                    (o.speculative.cost_gating
                         ? " (drafts only while measured to pay: docs/speculative.md)"
                         : " (drafts on every step)"));
  }
  if (max_model_len > c.context_length) {
    lines.push_back(printf_string(
        "warning: --max-model-len %lld is beyond the model's trained context of %lld "
        "(--allow-long-max-model-len): outputs past it are unreliable",
        static_cast<long long>(max_model_len), static_cast<long long>(c.context_length)));
  }
  if (num_tokens < max_model_len) {
    lines.push_back(printf_string(
        "warning: the KV pool holds %lld tokens, fewer than one --max-model-len request (%lld): "
        "requests longer than %lld tokens are refused; raise --kv-cache-memory or lower "
        "--max-model-len",
        static_cast<long long>(num_tokens), static_cast<long long>(max_model_len),
        static_cast<long long>(num_tokens)));
  }
  return lines;
}

}  // namespace strata::cli
