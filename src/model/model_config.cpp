#include "model/model_config.h"

#include <cmath>
#include <string>
#include <vector>

namespace strata {
namespace {

// Hyperparameters beyond these are treated as corrupt: they keep every
// product below 2^62 and every head count inside an int.
constexpr uint64_t kMaxDim = uint64_t{1} << 24;
constexpr uint64_t kMaxCount = uint64_t{1} << 16;

std::string shape_string(const int64_t* ne, int n_dims) {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) {
    if (i) s += ", ";
    s += std::to_string(ne[i]);
  }
  return s + "]";
}

class ConfigReader {
 public:
  ConfigReader(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  std::string key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  // A required unsigned integer in [1, max].
  Result<uint64_t> required_uint(std::string_view suffix, uint64_t max) const {
    const std::string k = key(suffix);
    if (file_.find(k) == nullptr)
      return invalid_argument("model: missing metadata key '" + k + "'");
    return checked_uint(k, max);
  }

  // An optional unsigned integer in [1, max]; `fallback` when absent.
  Result<uint64_t> optional_uint(std::string_view suffix, uint64_t max, uint64_t fallback) const {
    const std::string k = key(suffix);
    if (file_.find(k) == nullptr) return fallback;
    return checked_uint(k, max);
  }

  Result<double> optional_float(std::string_view suffix, double fallback) const {
    const std::string k = key(suffix);
    const GgufValue* v = file_.find(k);
    if (v == nullptr) return fallback;
    std::optional<double> f = file_.get_float(k);
    if (!f || !std::isfinite(*f)) {
      return invalid_argument("model: metadata key '" + k + "' must be a finite number (found " +
                              std::string(gguf_value_type_name(v->type)) + ")");
    }
    return *f;
  }

 private:
  Result<uint64_t> checked_uint(const std::string& k, uint64_t max) const {
    std::optional<uint64_t> v = file_.get_uint(k);
    if (!v) {
      return invalid_argument("model: metadata key '" + k +
                              "' must be an unsigned integer (found " +
                              std::string(gguf_value_type_name(file_.find(k)->type)) + ")");
    }
    if (*v == 0 || *v > max) {
      return invalid_argument("model: metadata key '" + k + "' = " + std::to_string(*v) +
                              " is out of range [1, " + std::to_string(max) + "]");
    }
    return *v;
  }

  const GgufFile& file_;
  std::string arch_;
};

// Checks one tensor's presence, shape and type. `why` names the
// hyperparameters the expected shape comes from.
class TensorChecker {
 public:
  explicit TensorChecker(const GgufFile& file) : file_(file) {}

  bool has(const std::string& name) const { return file_.tensor(name) != nullptr; }

  // A weight matrix of ne = [cols, rows] in any type strata has kernels for.
  Status matrix(const std::string& name, int64_t cols, int64_t rows, const std::string& why) const {
    const GgufTensor* t = file_.tensor(name);
    if (t == nullptr) return invalid_argument("model: missing tensor '" + name + "'");
    const int64_t want[2] = {cols, rows};
    if (t->n_dims != 2 || t->ne[0] != cols || t->ne[1] != rows) {
      return invalid_argument("model: " + name + " has shape " + shape_string(t->ne, t->n_dims) +
                              ", expected " + shape_string(want, 2) + " (" + why + ")");
    }
    const DTypeTraits& tr = dtype_traits(t->type);
    const bool is_int = t->type == DType::kI8 || t->type == DType::kI16 || t->type == DType::kI32 ||
                        t->type == DType::kI64 || t->type == DType::kF64 || t->type == DType::kQ8_K;
    if (!tr.is_supported || is_int) {
      return unimplemented("model: " + name + " has type " + std::string(tr.name) +
                           ", which strata cannot run (supported: f32, f16, bf16, q8_0, q4_0, "
                           "q4_K, q6_K)");
    }
    return Status::ok();
  }

  // A 1-D F32 vector of n elements (norm weights, biases).
  Status vector(const std::string& name, int64_t n, const std::string& why) const {
    const GgufTensor* t = file_.tensor(name);
    if (t == nullptr) return invalid_argument("model: missing tensor '" + name + "'");
    if (t->n_dims != 1 || t->ne[0] != n) {
      return invalid_argument("model: " + name + " has shape " + shape_string(t->ne, t->n_dims) +
                              ", expected [" + std::to_string(n) + "] (" + why + ")");
    }
    if (t->type != DType::kF32) {
      return invalid_argument("model: " + name + " has type " + std::string(dtype_name(t->type)) +
                              ", expected f32 (norm and bias tensors must be F32)");
    }
    return Status::ok();
  }

 private:
  const GgufFile& file_;
};

}  // namespace

std::string_view architecture_name(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama:
      return "llama";
    case Architecture::kQwen2:
      return "qwen2";
    case Architecture::kQwen3:
      return "qwen3";
  }
  return "?";
}

RopeParams ModelConfig::rope_params() const {
  RopeParams p;
  p.style = rope_style;
  p.head_dim = head_dim;
  p.rot_dim = rope_dim;
  p.freq_base = rope_freq_base;
  p.freq_scale = rope_freq_scale;
  return p;
}

Result<ModelConfig> ModelConfig::from_gguf(const GgufFile& file) {
  ModelConfig c;
  std::optional<std::string_view> arch_name = file.get_string("general.architecture");
  if (!arch_name) {
    return invalid_argument("model: missing metadata key 'general.architecture' (a string)");
  }
  if (*arch_name == "llama") {
    c.arch = Architecture::kLlama;
  } else if (*arch_name == "qwen2") {
    c.arch = Architecture::kQwen2;
  } else if (*arch_name == "qwen3") {
    c.arch = Architecture::kQwen3;
  } else {
    return unimplemented("model: architecture '" + std::string(*arch_name) +
                         "' is not supported (supported: llama, qwen2, qwen3)");
  }
  const std::string arch(*arch_name);
  ConfigReader r(file, arch);

  STRATA_ASSIGN_OR_RETURN(uint64_t context_length, r.required_uint("context_length", kMaxDim));
  STRATA_ASSIGN_OR_RETURN(uint64_t hidden, r.required_uint("embedding_length", kMaxDim));
  STRATA_ASSIGN_OR_RETURN(uint64_t num_layers, r.required_uint("block_count", kMaxCount));
  STRATA_ASSIGN_OR_RETURN(uint64_t ffn, r.required_uint("feed_forward_length", kMaxDim));
  STRATA_ASSIGN_OR_RETURN(uint64_t num_heads, r.required_uint("attention.head_count", kMaxCount));
  STRATA_ASSIGN_OR_RETURN(uint64_t num_kv_heads,
                          r.optional_uint("attention.head_count_kv", kMaxCount, num_heads));
  c.context_length = static_cast<int64_t>(context_length);
  c.hidden_dim = static_cast<int64_t>(hidden);
  c.num_layers = static_cast<int>(num_layers);
  c.ffn_dim = static_cast<int64_t>(ffn);
  c.num_heads = static_cast<int>(num_heads);
  c.num_kv_heads = static_cast<int>(num_kv_heads);
  if (c.num_heads % c.num_kv_heads != 0) {
    return invalid_argument("model: " + r.key("attention.head_count") + " = " +
                            std::to_string(c.num_heads) + " is not a multiple of " +
                            r.key("attention.head_count_kv") + " = " +
                            std::to_string(c.num_kv_heads));
  }

  // head_dim defaults to hidden / heads; qwen3 sets it explicitly.
  const uint64_t default_head_dim = hidden % num_heads == 0 ? hidden / num_heads : 0;
  STRATA_ASSIGN_OR_RETURN(uint64_t key_length,
                          r.optional_uint("attention.key_length", kMaxDim, default_head_dim));
  if (key_length == 0) {
    return invalid_argument("model: " + r.key("embedding_length") + " = " + std::to_string(hidden) +
                            " is not a multiple of " + r.key("attention.head_count") + " = " +
                            std::to_string(num_heads) + " and " + r.key("attention.key_length") +
                            " is absent");
  }
  STRATA_ASSIGN_OR_RETURN(uint64_t value_length,
                          r.optional_uint("attention.value_length", kMaxDim, key_length));
  if (value_length != key_length) {
    return unimplemented("model: " + r.key("attention.value_length") + " = " +
                         std::to_string(value_length) + " differs from " +
                         r.key("attention.key_length") + " = " + std::to_string(key_length) +
                         "; strata needs equal K and V head sizes");
  }
  c.head_dim = static_cast<int>(key_length);

  if (file.find(r.key("attention.layer_norm_rms_epsilon")) == nullptr) {
    return invalid_argument("model: missing metadata key '" +
                            r.key("attention.layer_norm_rms_epsilon") + "'");
  }
  STRATA_ASSIGN_OR_RETURN(double eps, r.optional_float("attention.layer_norm_rms_epsilon", 0));
  if (!(eps > 0 && eps < 1)) {
    return invalid_argument("model: " + r.key("attention.layer_norm_rms_epsilon") + " = " +
                            std::to_string(eps) + " is out of range (0, 1)");
  }
  c.rms_norm_eps = static_cast<float>(eps);

  // RoPE.
  c.rope_style = c.arch == Architecture::kLlama ? RopeStyle::kNormal : RopeStyle::kNeox;
  STRATA_ASSIGN_OR_RETURN(uint64_t rope_dim,
                          r.optional_uint("rope.dimension_count", kMaxDim, key_length));
  if (rope_dim > key_length || rope_dim % 2 != 0) {
    return invalid_argument("model: " + r.key("rope.dimension_count") + " = " +
                            std::to_string(rope_dim) +
                            " must be even and <= head_dim = " + std::to_string(key_length));
  }
  c.rope_dim = static_cast<int>(rope_dim);
  STRATA_ASSIGN_OR_RETURN(double freq_base, r.optional_float("rope.freq_base", 10000.0));
  if (!(freq_base > 1)) {
    return invalid_argument("model: " + r.key("rope.freq_base") + " = " +
                            std::to_string(freq_base) + " must be > 1");
  }
  c.rope_freq_base = static_cast<float>(freq_base);

  double scale_factor = 1.0;
  std::optional<std::string_view> scaling_type = file.get_string(r.key("rope.scaling.type"));
  if (file.find(r.key("rope.scaling.type")) != nullptr && !scaling_type) {
    return invalid_argument("model: metadata key '" + r.key("rope.scaling.type") +
                            "' must be a string");
  }
  if (scaling_type && *scaling_type != "none" && *scaling_type != "linear") {
    return unimplemented("model: " + r.key("rope.scaling.type") + " = '" +
                         std::string(*scaling_type) +
                         "' is not supported (supported: none, linear)");
  }
  if (!scaling_type || *scaling_type == "linear") {
    STRATA_ASSIGN_OR_RETURN(double legacy, r.optional_float("rope.scale_linear", 1.0));
    STRATA_ASSIGN_OR_RETURN(scale_factor, r.optional_float("rope.scaling.factor", legacy));
  }
  if (scale_factor == 0) scale_factor = 1.0;  // llama.cpp writes 0 for "no scaling"
  if (!(scale_factor > 0)) {
    return invalid_argument("model: " + r.key("rope.scaling.factor") + " = " +
                            std::to_string(scale_factor) + " must be > 0");
  }
  c.rope_freq_scale = static_cast<float>(1.0 / scale_factor);

  // Features strata does not implement must fail loudly rather than compute
  // something else.
  if (std::optional<uint64_t> window = file.get_uint(r.key("attention.sliding_window"));
      window && *window != 0) {
    return unimplemented("model: " + r.key("attention.sliding_window") + " = " +
                         std::to_string(*window) + ": sliding-window attention is not supported");
  }
  if (std::optional<uint64_t> experts = file.get_uint(r.key("expert_count"));
      experts && *experts != 0) {
    return unimplemented("model: " + r.key("expert_count") + " = " + std::to_string(*experts) +
                         ": mixture-of-experts models are not supported");
  }
  if (file.tensor("rope_freqs.weight") != nullptr) {
    return unimplemented(
        "model: tensor 'rope_freqs.weight' (per-dimension RoPE factors) is not "
        "supported");
  }

  // Tensors.
  TensorChecker t(file);
  const GgufTensor* embd = file.tensor("token_embd.weight");
  if (embd == nullptr) return invalid_argument("model: missing tensor 'token_embd.weight'");
  if (embd->n_dims != 2 || embd->ne[0] != c.hidden_dim) {
    return invalid_argument("model: token_embd.weight has shape " +
                            shape_string(embd->ne, embd->n_dims) + ", expected [" +
                            std::to_string(c.hidden_dim) +
                            ", n_vocab] (embedding_length=" + std::to_string(c.hidden_dim) + ")");
  }
  c.vocab_size = embd->ne[1];
  const std::string h = "embedding_length=" + std::to_string(c.hidden_dim);
  STRATA_RETURN_IF_ERROR(t.matrix("token_embd.weight", c.hidden_dim, c.vocab_size, h));
  STRATA_RETURN_IF_ERROR(t.vector("output_norm.weight", c.hidden_dim, h));
  c.is_output_tied = !t.has("output.weight");
  if (!c.is_output_tied) {
    STRATA_RETURN_IF_ERROR(t.matrix("output.weight", c.hidden_dim, c.vocab_size,
                                    h + ", n_vocab=" + std::to_string(c.vocab_size)));
  }

  const std::string hd = "head_dim=" + std::to_string(c.head_dim);
  const std::string q_why = h + ", head_count=" + std::to_string(c.num_heads) + ", " + hd;
  const std::string kv_why = h + ", head_count_kv=" + std::to_string(c.num_kv_heads) + ", " + hd;
  const std::string ffn_why = h + ", feed_forward_length=" + std::to_string(c.ffn_dim);
  c.has_qkv_bias = c.arch == Architecture::kQwen2 || t.has("blk.0.attn_q.bias");
  c.has_qk_norm = c.arch == Architecture::kQwen3;
  for (int il = 0; il < c.num_layers; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    STRATA_RETURN_IF_ERROR(t.vector(b + "attn_norm.weight", c.hidden_dim, h));
    STRATA_RETURN_IF_ERROR(t.matrix(b + "attn_q.weight", c.hidden_dim, c.q_dim(), q_why));
    STRATA_RETURN_IF_ERROR(t.matrix(b + "attn_k.weight", c.hidden_dim, c.kv_dim(), kv_why));
    STRATA_RETURN_IF_ERROR(t.matrix(b + "attn_v.weight", c.hidden_dim, c.kv_dim(), kv_why));
    STRATA_RETURN_IF_ERROR(t.matrix(b + "attn_output.weight", c.q_dim(), c.hidden_dim, q_why));
    if (c.has_qkv_bias) {
      STRATA_RETURN_IF_ERROR(t.vector(b + "attn_q.bias", c.q_dim(), q_why));
      STRATA_RETURN_IF_ERROR(t.vector(b + "attn_k.bias", c.kv_dim(), kv_why));
      STRATA_RETURN_IF_ERROR(t.vector(b + "attn_v.bias", c.kv_dim(), kv_why));
    } else if (t.has(b + "attn_q.bias") || t.has(b + "attn_k.bias") || t.has(b + "attn_v.bias")) {
      return unimplemented("model: " + b + "attn_{q,k,v}.bias present in a " + arch +
                           " model whose block 0 has none");
    }
    if (t.has(b + "attn_output.bias")) {
      return unimplemented("model: tensor '" + b + "attn_output.bias' is not supported");
    }
    if (c.has_qk_norm) {
      STRATA_RETURN_IF_ERROR(t.vector(b + "attn_q_norm.weight", c.head_dim, hd));
      STRATA_RETURN_IF_ERROR(t.vector(b + "attn_k_norm.weight", c.head_dim, hd));
    }
    STRATA_RETURN_IF_ERROR(t.vector(b + "ffn_norm.weight", c.hidden_dim, h));
    STRATA_RETURN_IF_ERROR(t.matrix(b + "ffn_gate.weight", c.hidden_dim, c.ffn_dim, ffn_why));
    STRATA_RETURN_IF_ERROR(t.matrix(b + "ffn_up.weight", c.hidden_dim, c.ffn_dim, ffn_why));
    STRATA_RETURN_IF_ERROR(t.matrix(b + "ffn_down.weight", c.ffn_dim, c.hidden_dim, ffn_why));
  }
  if (t.has("blk." + std::to_string(c.num_layers) + ".attn_norm.weight")) {
    return invalid_argument("model: tensor 'blk." + std::to_string(c.num_layers) +
                            ".attn_norm.weight' exists but " + r.key("block_count") + " = " +
                            std::to_string(c.num_layers));
  }
  return c;
}

}  // namespace strata
