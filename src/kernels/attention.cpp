#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention_block.h"
#include "kernels/dispatch.h"
#include "kernels/fp16.h"

namespace strata {
namespace {

// Scalar version of the per-block step (see attention_block.h).
void attend_block_scalar(const AttendBlockArgs& a) {
  const int hd = a.head_dim;
  for (int h = 0; h < a.group; ++h) {
    float* s = a.scores;  // [n]
    float block_max = -INFINITY;
    for (int j = 0; j < a.n; ++j) {
      const uint16_t* kr = a.k + j * a.row_stride;
      float dot = 0.0f;
      for (int i = 0; i < hd; ++i) dot += a.q[h * hd + i] * fp16_to_fp32(kr[i]);
      s[j] = a.scale * dot;
      block_max = std::max(block_max, s[j]);
    }
    const float new_max = std::max(a.run_max[h], block_max);
    const float correction = std::exp(a.run_max[h] - new_max);  // 0 on the first block
    float* acc = a.acc + h * hd;
    if (correction != 1.0f) {
      for (int i = 0; i < hd; ++i) acc[i] *= correction;
    }
    float sum = a.run_sum[h] * correction;
    for (int j = 0; j < a.n; ++j) {
      const float p = std::exp(s[j] - new_max);
      sum += p;
      const uint16_t* vr = a.v + j * a.row_stride;
      for (int i = 0; i < hd; ++i) acc[i] += p * fp16_to_fp32(vr[i]);
    }
    a.run_sum[h] = sum;
    a.run_max[h] = new_max;
  }
}

// Token t, KV head g: the query heads [g*group, (g+1)*group) attend to
// positions [0, pos[t]] with an online softmax, one KV block at a time.
void attend_group(const float* q, const KvLayerView& kv, const AttentionBatch& batch, int n_heads,
                  float scale, float* out, int64_t t, int g, bool use_avx2) {
  const int group = n_heads / kv.n_kv_heads;
  const int hd = kv.head_dim;
  const int bs = kv.block_size;
  const int64_t row_stride = static_cast<int64_t>(kv.n_kv_heads) * hd;  // elems per slot
  thread_local std::vector<float> scratch;
  const size_t scratch_floats = 2 * static_cast<size_t>(group) + static_cast<size_t>(bs) +
                                2 * static_cast<size_t>(bs) * hd + 8;
  if (scratch.size() < scratch_floats) scratch.resize(scratch_floats);
  AttendBlockArgs a;
  a.q = q + (t * n_heads + static_cast<int64_t>(g) * group) * hd;      // [group][hd]
  a.acc = out + (t * n_heads + static_cast<int64_t>(g) * group) * hd;  // [group][hd]
  a.group = group;
  a.head_dim = hd;
  a.row_stride = row_stride;
  a.scale = scale;
  a.run_max = scratch.data();     // [group]
  a.run_sum = a.run_max + group;  // [group]
  a.scores = a.run_sum + group;   // [bs]
  a.kv_f32 = a.scores + bs;       // [2][bs][hd]
  std::fill(a.acc, a.acc + static_cast<size_t>(group) * hd, 0.0f);
  std::fill(a.run_max, a.run_max + group, -INFINITY);
  std::fill(a.run_sum, a.run_sum + group, 0.0f);

  const int32_t* table = batch.block_tables[batch.seq[t]];
  const int64_t n_pos = static_cast<int64_t>(batch.pos[t]) + 1;
  for (int64_t p0 = 0; p0 < n_pos; p0 += bs) {
    a.n = static_cast<int>(std::min<int64_t>(bs, n_pos - p0));
    const int64_t base =
        static_cast<int64_t>(table[p0 / bs]) * bs * row_stride + static_cast<int64_t>(g) * hd;
    a.k = kv.k + base;
    a.v = kv.v + base;
    if (use_avx2) {
      avx2::attend_block(a);
    } else {
      attend_block_scalar(a);
    }
  }
  for (int h = 0; h < group; ++h) {
    const float inv = 1.0f / a.run_sum[h];
    float* acc = a.acc + h * hd;
    for (int i = 0; i < hd; ++i) acc[i] *= inv;
  }
}

}  // namespace

void write_kv(const KvLayerView& kv, const float* k, const float* v, const int32_t* slots,
              int64_t n_tokens) {
  const int64_t row = static_cast<int64_t>(kv.n_kv_heads) * kv.head_dim;
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (slots[t] < 0) continue;  // padding token: nothing to store
    uint16_t* kd = kv.k + static_cast<int64_t>(slots[t]) * row;
    uint16_t* vd = kv.v + static_cast<int64_t>(slots[t]) * row;
    for (int64_t i = 0; i < row; ++i) {
      kd[i] = fp32_to_fp16(k[t * row + i]);
      vd[i] = fp32_to_fp16(v[t * row + i]);
    }
  }
}

void paged_attention(const float* q, const KvLayerView& kv, const AttentionBatch& batch,
                     int n_heads, float scale, float* out, ThreadPool& pool) {
  const bool use_avx2 = kernel_isa() == KernelIsa::kAvx2;
  const int64_t n_tasks = batch.n_tokens * kv.n_kv_heads;
  auto work = [&](int ith, int nth) {
    int64_t begin, end;
    split_range(n_tasks, ith, nth, &begin, &end);
    for (int64_t task = begin; task < end; ++task) {
      attend_group(q, kv, batch, n_heads, scale, out, task / kv.n_kv_heads,
                   static_cast<int>(task % kv.n_kv_heads), use_avx2);
    }
  };
  if (n_tasks < 2) {
    work(0, 1);
  } else {
    pool.run(work);
  }
}

namespace ref {

void paged_attention(const float* q, const KvLayerView& kv, const AttentionBatch& batch,
                     int n_heads, float scale, float* out) {
  const int group = n_heads / kv.n_kv_heads;
  const int hd = kv.head_dim;
  const int64_t row = static_cast<int64_t>(kv.n_kv_heads) * hd;
  std::vector<float> scores;
  for (int64_t t = 0; t < batch.n_tokens; ++t) {
    const int32_t* table = batch.block_tables[batch.seq[t]];
    const int64_t n_pos = static_cast<int64_t>(batch.pos[t]) + 1;
    scores.resize(static_cast<size_t>(n_pos));
    for (int h = 0; h < n_heads; ++h) {
      const int g = h / group;
      const float* qh = q + (t * n_heads + h) * hd;
      float max_score = -INFINITY;
      for (int64_t p = 0; p < n_pos; ++p) {
        const int64_t slot =
            static_cast<int64_t>(table[p / kv.block_size]) * kv.block_size + p % kv.block_size;
        const uint16_t* kr = kv.k + slot * row + static_cast<int64_t>(g) * hd;
        float dot = 0.0f;
        for (int i = 0; i < hd; ++i) dot += qh[i] * fp16_to_fp32(kr[i]);
        scores[p] = dot * scale;
        max_score = std::max(max_score, scores[p]);
      }
      float sum = 0.0f;
      for (int64_t p = 0; p < n_pos; ++p) {
        scores[p] = std::exp(scores[p] - max_score);
        sum += scores[p];
      }
      float* o = out + (t * n_heads + h) * hd;
      std::fill(o, o + hd, 0.0f);
      for (int64_t p = 0; p < n_pos; ++p) {
        const int64_t slot =
            static_cast<int64_t>(table[p / kv.block_size]) * kv.block_size + p % kv.block_size;
        const uint16_t* vr = kv.v + slot * row + static_cast<int64_t>(g) * hd;
        const float w = scores[p] / sum;
        for (int i = 0; i < hd; ++i) o[i] += w * fp16_to_fp32(vr[i]);
      }
    }
  }
}

}  // namespace ref
}  // namespace strata
