#include "random_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "gguf/gguf.h"
#include "hparams_metadata.h"
#include "kernels/quant.h"
#include "prng.h"
#include "tokenizer/tokenizer_export.h"
#include "util/dtype.h"
#include "util/thread_pool.h"

namespace strata::mkmodel {
namespace {

// llama.cpp's llama_ftype numbers, written as general.file_type.
struct TypeChoice {
  const char* name;
  DType base;
  uint32_t file_type;
};
constexpr TypeChoice kTypes[] = {
    {"f32", DType::kF32, 0},    {"f16", DType::kF16, 1},      {"bf16", DType::kBF16, 32},
    {"q8_0", DType::kQ8_0, 7},  {"q4_0", DType::kQ4_0, 2},    {"q4_k", DType::kQ4_K, 14},
    {"q6_k", DType::kQ6_K, 18}, {"q4_k_m", DType::kQ4_K, 15},
};

// The Q4_K_M mix: a layer gets 6-bit attn_v / ffn_down when it is in the
// first or last eighth of the stack, or every third layer in between.
bool wants_more_bits(int layer, int num_layers) {
  const int eighth = num_layers / 8;
  return layer < eighth || layer >= 7 * num_layers / 8 || (layer - eighth) % 3 == 2;
}

class Builder {
 public:
  Builder(const RandomModelSpec& spec, GgufWriter& w, ThreadPool& pool)
      : spec_(spec), w_(w), pool_(pool) {}

  // A 2-D weight of ne = [cols, rows], values scale * N(0, 1)(+ offset), in
  // `type` (falls back to Q8_0 when cols is not a multiple of its block).
  void matrix(const std::string& name, DType type, int64_t cols, int64_t rows, double stddev) {
    if (cols % dtype_traits(type).block_elems != 0) type = DType::kQ8_0;
    if (cols % dtype_traits(type).block_elems != 0) type = DType::kF16;
    w_.add_tensor(name, type, {cols, rows}, generate(name, type, cols, rows, stddev, 0.0));
  }

  void vector(const std::string& name, int64_t n, double stddev, double mean) {
    w_.add_tensor(name, DType::kF32, {n}, generate(name, DType::kF32, n, 1, stddev, mean));
  }

 private:
  // Rows are generated from their own streams (seed, tensor, row), so the
  // bytes do not depend on the thread count.
  std::vector<uint8_t> generate(const std::string& name, DType type, int64_t cols, int64_t rows,
                                double stddev, double mean) {
    const size_t row_bytes = dtype_row_bytes(type, cols);
    std::vector<uint8_t> out(row_bytes * static_cast<size_t>(rows));
    const uint64_t tensor_seed = mix_seed(spec_.seed, name_hash(name.c_str()));
    constexpr int64_t kChunkRows = 16;
    pool_.run([&](int ith, int nth) {
      std::vector<float> buf(static_cast<size_t>(kChunkRows * cols));
      const int64_t num_chunks = (rows + kChunkRows - 1) / kChunkRows;
      for (int64_t chunk = ith; chunk < num_chunks; chunk += nth) {
        const int64_t r0 = chunk * kChunkRows;
        const int64_t r1 = std::min(rows, r0 + kChunkRows);
        for (int64_t r = r0; r < r1; ++r) {
          Prng rng(mix_seed(tensor_seed, static_cast<uint64_t>(r)));
          float* row = buf.data() + (r - r0) * cols;
          for (int64_t i = 0; i < cols; ++i) {
            row[i] = static_cast<float>(mean + stddev * rng.normal());
          }
        }
        const std::vector<uint8_t> q = quantize_rows(type, buf.data(), r1 - r0, cols);
        std::memcpy(out.data() + static_cast<size_t>(r0) * row_bytes, q.data(), q.size());
      }
    });
    return out;
  }

  const RandomModelSpec& spec_;
  GgufWriter& w_;
  ThreadPool& pool_;
};

}  // namespace

Status write_random_model(const RandomModelSpec& s, const std::string& path) {
  const TypeChoice* choice = nullptr;
  for (const TypeChoice& t : kTypes) {
    if (s.type == t.name) choice = &t;
  }
  if (choice == nullptr) {
    return invalid_argument("mkmodel: --type '" + s.type +
                            "' unknown (f32 f16 bf16 q8_0 q4_0 q4_k q6_k q4_k_m)");
  }
  if (s.arch != "llama" && s.arch != "qwen2" && s.arch != "qwen3") {
    return invalid_argument("mkmodel: --arch '" + s.arch + "' unknown (llama qwen2 qwen3)");
  }
  if (s.num_layers < 1 || s.hidden_dim < 1 || s.num_heads < 1 || s.num_kv_heads < 1 ||
      s.ffn_dim < 1 || s.context_length < 1 || s.num_heads % s.num_kv_heads != 0) {
    return invalid_argument(
        "mkmodel: layers, hidden, heads, kv-heads, ffn, ctx must be positive "
        "and heads a multiple of kv-heads");
  }
  if (s.head_dim == 0 && s.hidden_dim % s.num_heads != 0) {
    return invalid_argument("mkmodel: --hidden must be a multiple of --heads (or set --head-dim)");
  }
  const int head_dim = s.head_dim > 0 ? s.head_dim : static_cast<int>(s.hidden_dim / s.num_heads);
  if (head_dim % 2 != 0) return invalid_argument("mkmodel: head_dim must be even");
  if (s.tokenizer_json.empty() && s.vocab_size < 300) {
    return invalid_argument(
        "mkmodel: --vocab must be >= 300 (256 byte tokens + specials + pieces)");
  }
  const int64_t q_dim = int64_t{s.num_heads} * head_dim;
  const int64_t kv_dim = int64_t{s.num_kv_heads} * head_dim;

  GgufWriter w;
  const std::string& a = s.arch;
  write_hparams_metadata({a, "strata-random-" + a + "-" + s.type, choice->file_type,
                          s.context_length, s.hidden_dim, s.num_layers, s.ffn_dim, s.num_heads,
                          s.num_kv_heads, head_dim, s.rms_norm_eps, s.rope_freq_base},
                         w);
  int64_t vocab = s.vocab_size;
  if (s.tokenizer_json.empty()) {
    write_synthetic_spm_vocab(w, s.vocab_size, s.seed);
  } else {
    STRATA_RETURN_IF_ERROR(export_hf_tokenizer_to_gguf(s.tokenizer_json, w));
    // The vocabulary size is the tokenizer's: read it back from the
    // metadata written so far.
    const std::vector<uint8_t> head = w.serialize();
    STRATA_ASSIGN_OR_RETURN(GgufFile parsed, GgufFile::parse(head.data(), head.size()));
    const GgufValue* tokens = parsed.get_array("tokenizer.ggml.tokens");
    if (tokens == nullptr || tokens->count == 0) {
      return invalid_argument("mkmodel: " + s.tokenizer_json + " exported no tokens");
    }
    vocab = static_cast<int64_t>(tokens->count);
  }

  const int num_threads = s.num_threads > 0
                              ? s.num_threads
                              : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  ThreadPool pool(num_threads);
  Builder b(s, w, pool);
  const DType base = choice->base;
  const bool is_mix = s.type == "q4_k_m";
  const double inv_sqrt_hidden = 1.0 / std::sqrt(static_cast<double>(s.hidden_dim));
  const double head_scale = inv_sqrt_hidden * s.peaky_scale;
  // A peaky model keeps the token in the residual stream (embedding rms 1,
  // layer outputs x1/8) so that logits depend mostly on the current token:
  // rounding differences between engines then stay small against the
  // top-2 margins instead of being amplified layer after layer.
  const bool is_peaky = s.peaky_scale != 1.0f;
  const double embd_scale = s.is_tied ? head_scale : (is_peaky ? 1.0 : inv_sqrt_hidden);
  const double layer_out_scale = is_peaky ? 0.125 : 1.0;

  b.matrix("token_embd.weight", base, s.hidden_dim, vocab, embd_scale);
  b.vector("output_norm.weight", s.hidden_dim, 0.05, 1.0);
  if (!s.is_tied) {
    b.matrix("output.weight", is_mix ? DType::kQ6_K : base, s.hidden_dim, vocab, head_scale);
  }
  for (int il = 0; il < s.num_layers; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    const DType more = is_mix && wants_more_bits(il, s.num_layers) ? DType::kQ6_K : base;
    b.vector(p + "attn_norm.weight", s.hidden_dim, 0.05, 1.0);
    b.matrix(p + "attn_q.weight", base, s.hidden_dim, q_dim, inv_sqrt_hidden);
    b.matrix(p + "attn_k.weight", base, s.hidden_dim, kv_dim, inv_sqrt_hidden);
    b.matrix(p + "attn_v.weight", more, s.hidden_dim, kv_dim, inv_sqrt_hidden);
    if (a == "qwen2") {
      b.vector(p + "attn_q.bias", q_dim, 0.1, 0.0);
      b.vector(p + "attn_k.bias", kv_dim, 0.1, 0.0);
      b.vector(p + "attn_v.bias", kv_dim, 0.1, 0.0);
    }
    if (a == "qwen3") {
      b.vector(p + "attn_q_norm.weight", head_dim, 0.05, 1.0);
      b.vector(p + "attn_k_norm.weight", head_dim, 0.05, 1.0);
    }
    b.matrix(p + "attn_output.weight", base, q_dim, s.hidden_dim,
             layer_out_scale / std::sqrt(static_cast<double>(q_dim)));
    b.vector(p + "ffn_norm.weight", s.hidden_dim, 0.05, 1.0);
    b.matrix(p + "ffn_gate.weight", base, s.hidden_dim, s.ffn_dim, inv_sqrt_hidden);
    b.matrix(p + "ffn_up.weight", base, s.hidden_dim, s.ffn_dim, inv_sqrt_hidden);
    b.matrix(p + "ffn_down.weight", more, s.ffn_dim, s.hidden_dim,
             layer_out_scale / std::sqrt(static_cast<double>(s.ffn_dim)));
  }
  return w.write(path);
}

}  // namespace strata::mkmodel
