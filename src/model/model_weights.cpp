#include "model/model_weights.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "kernels/packed_weight.h"
#include "kernels/quant.h"
#include "util/thread_pool.h"

namespace strata {
namespace {

// Tensors were checked by ModelConfig::from_gguf; these only build views.
WeightView view_of(const GgufFile& file, const std::string& name) {
  const GgufTensor* t = file.tensor(name);
  WeightView w;
  w.type = t->type;
  w.cols = t->ne[0];
  w.rows = t->ne[1];
  w.data = t->data;
  w.row_bytes = dtype_row_bytes(t->type, t->ne[0]);
  return w;
}

const float* f32_of(const GgufFile& file, const std::string& name) {
  const GgufTensor* t = file.tensor(name);
  return t == nullptr ? nullptr : reinterpret_cast<const float*>(t->data);
}

}  // namespace

Result<ModelWeights> ModelWeights::open(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
  return load(std::move(file));
}

Result<ModelWeights> ModelWeights::load(GgufFile file) {
  STRATA_ASSIGN_OR_RETURN(ModelConfig config, ModelConfig::from_gguf(file));
  ModelWeights m;
  m.file_ = std::make_unique<GgufFile>(std::move(file));
  m.config_ = config;
  const GgufFile& f = *m.file_;
  // F32 tensors are read through float pointers; GGUF aligns tensor data to
  // at least 4 bytes only if the file's alignment says so.
  for (const GgufTensor& t : f.tensors()) {
    if (t.type == DType::kF32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) != 0) {
      return invalid_argument("model: tensor '" + t.name + "' data is not 4-byte aligned");
    }
  }
  m.token_embd_ = view_of(f, "token_embd.weight");
  m.output_ = config.is_output_tied ? m.token_embd_ : view_of(f, "output.weight");
  m.output_norm_ = f32_of(f, "output_norm.weight");
  m.layers_.resize(config.num_layers);
  for (int il = 0; il < config.num_layers; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    LayerWeights& l = m.layers_[il];
    l.attn_norm = f32_of(f, b + "attn_norm.weight");
    l.attn_q = view_of(f, b + "attn_q.weight");
    l.attn_k = view_of(f, b + "attn_k.weight");
    l.attn_v = view_of(f, b + "attn_v.weight");
    l.attn_output = view_of(f, b + "attn_output.weight");
    if (config.has_qkv_bias) {
      l.bias_q = f32_of(f, b + "attn_q.bias");
      l.bias_k = f32_of(f, b + "attn_k.bias");
      l.bias_v = f32_of(f, b + "attn_v.bias");
    }
    if (config.has_qk_norm) {
      l.q_norm = f32_of(f, b + "attn_q_norm.weight");
      l.k_norm = f32_of(f, b + "attn_k_norm.weight");
    }
    l.ffn_norm = f32_of(f, b + "ffn_norm.weight");
    l.ffn_gate = view_of(f, b + "ffn_gate.weight");
    l.ffn_up = view_of(f, b + "ffn_up.weight");
    l.ffn_down = view_of(f, b + "ffn_down.weight");
  }
  m.pack_weights();
  return m;
}

void ModelWeights::pack_weights() {
  std::vector<WeightView*> views;
  for (LayerWeights& l : layers_) {
    for (WeightView* v :
         {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) {
      views.push_back(v);
    }
  }
  views.push_back(&output_);  // when tied, a packed copy; token_embd_ stays for embed()
  bool any = false;
  for (const WeightView* v : views) any = any || PackedWeight::is_packable(v->type);
  if (!any) return;
  ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  for (WeightView* v : views) {
    std::unique_ptr<PackedWeight> p = PackedWeight::pack(*v, &pool);
    if (p == nullptr) continue;
    const bool shared_with_embd = v->data == token_embd_.data;
    if (!shared_with_embd)
      file_->release_pages(v->data, v->row_bytes * static_cast<size_t>(v->rows));
    *v = p->view();
    packed_.push_back(std::move(p));
  }
}

void ModelWeights::embed(int32_t token, float* out) const {
  const auto* row = static_cast<const uint8_t*>(token_embd_.data) +
                    static_cast<size_t>(token) * token_embd_.row_bytes;
  dequantize_row(token_embd_.type, row, out, token_embd_.cols);
}

}  // namespace strata
