#include "kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/attention_block.h"
#include "kernels/dispatch.h"
#include "kernels/fp16.h"

namespace strata {

void softmax_weights_scalar(float* s, int64_t n) {
  float max_score = -INFINITY;
  for (int64_t j = 0; j < n; ++j) max_score = std::max(max_score, s[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) {
    s[j] = std::exp(s[j] - max_score);
    sum += s[j];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (int64_t j = 0; j < n; ++j) s[j] = fp16_to_fp32(fp32_to_fp16(s[j] * inv_sum));
}

namespace {

// Scalar versions of the per-block steps (see attention_block.h).
void score_block_scalar(const AttendBlockArgs& a) {
  const int hd = a.head_dim;
  for (int h = 0; h < a.group; ++h) {
    for (int j = 0; j < a.n; ++j) {
      const uint16_t* kr = a.k + j * a.row_stride;
      float dot = 0.0f;
      for (int i = 0; i < hd; ++i) dot += a.q[h * hd + i] * fp16_to_fp32(kr[i]);
      a.scores[h * a.score_stride + j] = a.scale * dot;
    }
  }
}

void accumulate_block_scalar(const AttendBlockArgs& a) {
  const int hd = a.head_dim;
  for (int h = 0; h < a.group; ++h) {
    float* acc = a.acc + h * hd;
    for (int j = 0; j < a.n; ++j) {
      const float p = a.scores[h * a.score_stride + j];
      const uint16_t* vr = a.v + j * a.row_stride;
      for (int i = 0; i < hd; ++i) acc[i] += p * fp16_to_fp32(vr[i]);
    }
  }
}

// Token t, KV head g: the query heads [g*group, (g+1)*group) attend to
// positions [0, pos[t]]: scores for the whole row block by block, softmax
// per head, then the weighted sum of V block by block.
void attend_group(const float* q, const KvLayerView& kv, const AttentionBatch& batch, int n_heads,
                  float scale, float* out, int64_t t, int g, bool use_avx2, bool use_avx512) {
  const int group = n_heads / kv.n_kv_heads;
  const int hd = kv.head_dim;
  const int bs = kv.block_size;
  const int64_t row_stride = static_cast<int64_t>(kv.n_kv_heads) * hd;  // elems per slot
  const int64_t n_pos = static_cast<int64_t>(batch.pos[t]) + 1;
  const int64_t score_stride = (n_pos + 7) / 8 * 8;
  thread_local std::vector<float> scratch;
  const size_t q_floats = static_cast<size_t>(group) * hd;
  const size_t score_floats = static_cast<size_t>(group) * score_stride;
  const size_t scratch_floats = q_floats + score_floats + static_cast<size_t>(bs) * hd;
  if (scratch.size() < scratch_floats) scratch.resize(scratch_floats);
  const float* q_group = q + (t * n_heads + static_cast<int64_t>(g) * group) * hd;
  float* q16 = scratch.data();  // [group][hd], q rounded to fp16 as llama.cpp's K·q does
  if (use_avx2) {
    avx2::round_to_fp16(q_group, q16, static_cast<int64_t>(q_floats));
  } else {
    for (size_t i = 0; i < q_floats; ++i) q16[i] = fp16_to_fp32(fp32_to_fp16(q_group[i]));
  }
  AttendBlockArgs a;
  a.q = q16;
  a.acc = out + (t * n_heads + static_cast<int64_t>(g) * group) * hd;  // [group][hd]
  a.group = group;
  a.head_dim = hd;
  a.row_stride = row_stride;
  a.scale = scale;
  a.score_stride = score_stride;
  float* scores = q16 + q_floats;  // [group][score_stride]
  a.kv_f32 = scores + score_floats;
  std::fill(a.acc, a.acc + q_floats, 0.0f);

  const int32_t* table = batch.block_tables[batch.seq[t]];
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      for (int h = 0; h < group; ++h) {
        if (use_avx2) {
          avx2::softmax_weights(scores + h * score_stride, n_pos);
        } else {
          softmax_weights_scalar(scores + h * score_stride, n_pos);
        }
      }
    }
    for (int64_t p0 = 0; p0 < n_pos; p0 += bs) {
      a.n = static_cast<int>(std::min<int64_t>(bs, n_pos - p0));
      const int64_t base =
          static_cast<int64_t>(table[p0 / bs]) * bs * row_stride + static_cast<int64_t>(g) * hd;
      a.k = kv.k + base;
      a.v = kv.v + base;
      a.scores = scores + p0;
      if (pass == 0) {
        if (use_avx512) {
          avx512::score_block(a);
        } else if (use_avx2) {
          avx2::score_block(a);
        } else {
          score_block_scalar(a);
        }
      } else if (use_avx512) {
        avx512::accumulate_block(a);
      } else if (use_avx2) {
        avx2::accumulate_block(a);
      } else {
        accumulate_block_scalar(a);
      }
    }
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
  const bool use_avx2 = kernel_isa_has_avx2(kernel_isa());
  // The AVX-512 steps serve every token of a model (the choice depends only
  // on the ISA and the head size), so outputs stay batch-invariant.
  const bool use_avx512 =
      kernel_isa() == KernelIsa::kAvx512Vnni && avx512::attention_supports(kv.head_dim);
  const int64_t n_tasks = batch.n_tokens * kv.n_kv_heads;
  auto work = [&](int ith, int nth) {
    int64_t begin, end;
    split_range(n_tasks, ith, nth, &begin, &end);
    for (int64_t task = begin; task < end; ++task) {
      attend_group(q, kv, batch, n_heads, scale, out, task / kv.n_kv_heads,
                   static_cast<int>(task % kv.n_kv_heads), use_avx2, use_avx512);
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
  std::vector<float> q16(static_cast<size_t>(hd));
  for (int64_t t = 0; t < batch.n_tokens; ++t) {
    const int32_t* table = batch.block_tables[batch.seq[t]];
    const int64_t n_pos = static_cast<int64_t>(batch.pos[t]) + 1;
    scores.resize(static_cast<size_t>(n_pos));
    for (int h = 0; h < n_heads; ++h) {
      const int g = h / group;
      const float* qh = q + (t * n_heads + h) * hd;
      for (int i = 0; i < hd; ++i) q16[i] = fp16_to_fp32(fp32_to_fp16(qh[i]));
      for (int64_t p = 0; p < n_pos; ++p) {
        const int64_t slot =
            static_cast<int64_t>(table[p / kv.block_size]) * kv.block_size + p % kv.block_size;
        const uint16_t* kr = kv.k + slot * row + static_cast<int64_t>(g) * hd;
        float dot = 0.0f;
        for (int i = 0; i < hd; ++i) dot += q16[i] * fp16_to_fp32(kr[i]);
        scores[p] = scale * dot;
      }
      softmax_weights_scalar(scores.data(), n_pos);
      float* o = out + (t * n_heads + h) * hd;
      std::fill(o, o + hd, 0.0f);
      for (int64_t p = 0; p < n_pos; ++p) {
        const int64_t slot =
            static_cast<int64_t>(table[p / kv.block_size]) * kv.block_size + p % kv.block_size;
        const uint16_t* vr = kv.v + slot * row + static_cast<int64_t>(g) * hd;
        for (int i = 0; i < hd; ++i) o[i] += scores[p] * fp16_to_fp32(vr[i]);
      }
    }
  }
}

}  // namespace ref
}  // namespace strata
