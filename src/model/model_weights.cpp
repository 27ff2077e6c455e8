#include "model/model_weights.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <utility>

#include "kernels/packed_weight.h"
#include "kernels/quant.h"
#include "parallel/process_group.h"
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

// Rows [r0, r1) of w: contiguous bytes, a view.
WeightView row_slice(const WeightView& w, int64_t r0, int64_t r1) {
  WeightView v = w;
  v.rows = r1 - r0;
  v.data = static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r0) * w.row_bytes;
  return v;
}

// Columns [c0, c1) of every row of w (whole blocks), copied into `storage`.
WeightView column_slice(const WeightView& w, int64_t c0, int64_t c1,
                        std::unique_ptr<uint8_t[]>* storage) {
  WeightView v = w;
  v.cols = c1 - c0;
  v.row_bytes = dtype_row_bytes(w.type, v.cols);
  const size_t skip = dtype_row_bytes(w.type, c0);
  *storage = std::make_unique<uint8_t[]>(v.row_bytes * static_cast<size_t>(w.rows));
  const auto* src = static_cast<const uint8_t*>(w.data);
  for (int64_t r = 0; r < w.rows; ++r) {
    std::memcpy(storage->get() + static_cast<size_t>(r) * v.row_bytes,
                src + static_cast<size_t>(r) * w.row_bytes + skip, v.row_bytes);
  }
  v.data = storage->get();
  return v;
}

}  // namespace

Result<ModelWeights> ModelWeights::open(const std::string& path, ProcessGroup* group) {
  STRATA_ASSIGN_OR_RETURN(GgufFile file, GgufFile::open(path));
  return load(std::move(file), group);
}

Result<ModelWeights> ModelWeights::load(GgufFile file, ProcessGroup* group) {
  return load_impl(std::move(file), group != nullptr ? group->layout() : ParallelLayout{}, group);
}

Result<ModelWeights> ModelWeights::load_shard(GgufFile file, const ParallelLayout& layout) {
  return load_impl(std::move(file), layout, nullptr);
}

Result<ModelWeights> ModelWeights::load_impl(GgufFile file, const ParallelLayout& layout,
                                             ProcessGroup* group) {
  STRATA_ASSIGN_OR_RETURN(ModelConfig config, ModelConfig::from_gguf(file));
  ModelWeights m;
  m.group_ = group;
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
  m.local_config_ = config;
  m.vocab_end_ = config.vocab_size;
  STRATA_RETURN_IF_ERROR(m.shard(layout));
  m.pack_weights();
  return m;
}

Status ModelWeights::shard(const ParallelLayout& layout) {
  layout_ = layout;
  if (!layout.is_parallel()) return Status::ok();
  const ModelConfig& c = config_;
  const int t = layout.tensor_parallel_size;
  const std::string tp_flag = "--tensor-parallel-size " + std::to_string(t);
  const auto indivisible = [&](const char* what, int64_t n) {
    return invalid_argument("model: " + std::string(what) + " (" + std::to_string(n) +
                            ") is not divisible by " + tp_flag);
  };
  if (c.num_heads % t != 0) return indivisible("the attention head count", c.num_heads);
  if (c.num_kv_heads % t != 0) return indivisible("the KV head count", c.num_kv_heads);
  if (c.ffn_dim % t != 0) return indivisible("the FFN width", c.ffn_dim);
  if (c.num_layers < layout.pipeline_parallel_size) {
    return invalid_argument("model: " + std::to_string(c.num_layers) + " layers cannot make " +
                            std::to_string(layout.pipeline_parallel_size) +
                            " pipeline stages (--pipeline-parallel-size)");
  }
  int l0 = 0, l1 = 0;
  layout.layer_range(c.num_layers, &l0, &l1);
  first_layer_ = l0;
  layers_ = std::vector<LayerWeights>(layers_.begin() + l0, layers_.begin() + l1);
  local_config_.num_layers = l1 - l0;
  local_config_.num_heads = c.num_heads / t;
  local_config_.num_kv_heads = c.num_kv_heads / t;
  local_config_.ffn_dim = c.ffn_dim / t;
  const int64_t q_dim = local_config_.q_dim(), kv_dim = local_config_.kv_dim();
  const int64_t ffn = local_config_.ffn_dim;
  const int64_t s = layout.tp_rank();
  for (LayerWeights& l : layers_) {
    // The row-parallel weights split their inputs: each shard must be whole
    // quant blocks.
    for (const auto& [w, cols] : {std::pair{&l.attn_output, q_dim}, std::pair{&l.ffn_down, ffn}}) {
      const uint32_t block = dtype_traits(w->type).block_elems;
      if (cols % block != 0) {
        return invalid_argument("model: a " + std::string(dtype_name(w->type)) + " shard of " +
                                std::to_string(cols) + " input columns is not whole blocks of " +
                                std::to_string(block) + " (" + tp_flag + ")");
      }
    }
    l.attn_q = row_slice(l.attn_q, s * q_dim, (s + 1) * q_dim);
    l.attn_k = row_slice(l.attn_k, s * kv_dim, (s + 1) * kv_dim);
    l.attn_v = row_slice(l.attn_v, s * kv_dim, (s + 1) * kv_dim);
    if (l.bias_q != nullptr) {
      l.bias_q += s * q_dim;
      l.bias_k += s * kv_dim;
      l.bias_v += s * kv_dim;
    }
    l.ffn_gate = row_slice(l.ffn_gate, s * ffn, (s + 1) * ffn);
    l.ffn_up = row_slice(l.ffn_up, s * ffn, (s + 1) * ffn);
    // A column slice reads every page of its weight (rows are shorter than
    // a page); the copy is all that stays resident.
    for (const auto& [w, cols] : {std::pair{&l.attn_output, q_dim}, std::pair{&l.ffn_down, ffn}}) {
      const WeightView whole = *w;
      column_shards_.emplace_back();
      *w = column_slice(whole, s * cols, (s + 1) * cols, &column_shards_.back());
      file_->release_pages(whole.data, whole.row_bytes * static_cast<size_t>(whole.rows));
    }
  }
  layout.shard_range(c.vocab_size, &vocab_begin_, &vocab_end_);
  output_ = row_slice(output_, vocab_begin_, vocab_end_);
  return Status::ok();
}

void ModelWeights::pack_weights() {
  std::vector<WeightView*> views;
  for (LayerWeights& l : layers_) {
    for (WeightView* v :
         {&l.attn_q, &l.attn_k, &l.attn_v, &l.attn_output, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) {
      views.push_back(v);
    }
  }
  if (layout_.is_last_stage()) {
    views.push_back(&output_);  // when tied, a packed copy; token_embd_ stays for embed()
  }
  bool any = false;
  for (const WeightView* v : views) any = any || PackedWeight::is_packable(v->type);
  if (!any) return;
  ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  for (WeightView* v : views) {
    std::unique_ptr<uint8_t[]>* shard = nullptr;  // v's column-slice copy, if it is one
    for (std::unique_ptr<uint8_t[]>& s : column_shards_) {
      if (s.get() == v->data) shard = &s;
    }
    // A float weight is copied only out of the file: a column slice
    // already lives in memory of its own.
    if (shard != nullptr && PackedWeight::copies_as_is(v->type)) continue;
    std::unique_ptr<PackedWeight> p = PackedWeight::pack(*v, &pool);
    if (p == nullptr) continue;
    const auto* embd = static_cast<const uint8_t*>(token_embd_.data);
    const auto* data = static_cast<const uint8_t*>(v->data);
    const bool shared_with_embd =
        data >= embd && data < embd + token_embd_.row_bytes * static_cast<size_t>(token_embd_.rows);
    const bool is_copy = shard != nullptr;
    if (is_copy) shard->reset();  // the packed copy replaces it
    if (!shared_with_embd && !is_copy)
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
