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
      const uint16_t* kr = a.k + j * hd;
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
      const uint16_t* vr = a.v + j * hd;
      for (int i = 0; i < hd; ++i) acc[i] += p * fp16_to_fp32(vr[i]);
    }
  }
}

// Token t, KV head g: the query heads [g*group, (g+1)*group) attend to
// positions [0, pos[t]]: scores for the whole row block by block, softmax
// per head, then the weighted sum of V block by block.
void attend_group(const float* q, const KvLayerView& kv, const AttentionBatch& batch, int n_heads,
                  float scale, float* out, int64_t t, int g, bool use_avx2) {
  const int group = n_heads / kv.n_kv_heads;
  const int hd = kv.head_dim;
  const int bs = kv.block_size;
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
      const int64_t base = kv_row_offset(kv, static_cast<int64_t>(table[p0 / bs]) * bs, g);
      a.k = kv.k + base;
      a.v = kv.v + base;
      a.scores = scores + p0;
      if (pass == 0) {
        if (use_avx2) {
          avx2::score_block(a);
        } else {
          score_block_scalar(a);
        }
      } else if (use_avx2) {
        avx2::accumulate_block(a);
      } else {
        accumulate_block_scalar(a);
      }
    }
  }
}

// Consecutive batch tokens of one sequence at consecutive positions (a
// prefill chunk, or one token), processed together by the AVX-512 path.
struct TokenTile {
  int64_t first = 0;
  int num_tokens = 0;
};

// At most this many tokens share a tile, and their scores (group * (pos + 1)
// floats per token, per thread) stay within kTileScoreBytes. More tokens
// share each K/V conversion; the scores outgrow L2 (1 MiB per core here)
// but stream. Measured at 2 threads, group 8, 4000 positions: 16 tokens
// (2 MiB) ~4% faster than 8 on idle cores, ~8% slower when another process
// shares the cores.
constexpr int kMaxTileTokens = 16;
constexpr int64_t kTileScoreBytes = int64_t{2} << 20;
// A task's cost in positions attended, plus this per token (the fixed work).
constexpr int64_t kTokenCostPositions = 32;

// Splits the batch into tiles: each run of consecutive-position tokens of
// one sequence into near-equal tiles within the limits above, and into at
// least min_tiles where the run is that long (so that its tasks can be
// spread over the threads). max_tokens = 1 gives one tile per token.
std::vector<TokenTile> make_tiles(const AttentionBatch& batch, int max_tokens, int group,
                                  int min_tiles) {
  std::vector<TokenTile> tiles;
  int64_t t = 0;
  while (t < batch.n_tokens) {
    int64_t run = 1;
    while (t + run < batch.n_tokens && batch.seq[t + run] == batch.seq[t] &&
           batch.pos[t + run] == batch.pos[t + run - 1] + 1) {
      ++run;
    }
    const int64_t last_num_pos = static_cast<int64_t>(batch.pos[t + run - 1]) + 1;
    const int64_t fit = kTileScoreBytes / (int64_t{4} * group * last_num_pos);
    const int64_t tile_max = std::clamp<int64_t>(fit, 1, max_tokens);
    const int64_t n_tiles =
        std::min<int64_t>(run, std::max<int64_t>((run + tile_max - 1) / tile_max, min_tiles));
    for (int64_t i = 0; i < n_tiles; ++i) {
      const int64_t begin = run * i / n_tiles, end = run * (i + 1) / n_tiles;
      tiles.push_back({t + begin, static_cast<int>(end - begin)});
    }
    t += run;
  }
  return tiles;
}

// Thread boundaries over the (tile, KV head) tasks, tile-major: thread ith
// runs tasks [bounds[ith], bounds[ith + 1]), contiguous ranges of about
// equal cost (a task goes to the thread whose share holds its midpoint).
std::vector<int64_t> split_by_cost(const std::vector<TokenTile>& tiles, int n_kv_heads,
                                   const AttentionBatch& batch, int nth) {
  std::vector<int64_t> tile_cost(tiles.size());
  int64_t total = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const int64_t n = tiles[i].num_tokens;
    const int64_t first_pos = batch.pos[tiles[i].first] + 1;
    // Positions attended by first_pos, first_pos + 1, ... (n tokens).
    tile_cost[i] = n * first_pos + n * (n - 1) / 2 + n * kTokenCostPositions;
    total += tile_cost[i] * n_kv_heads;
  }
  std::vector<int64_t> bounds(static_cast<size_t>(nth) + 1, 0);
  const int64_t n_tasks = static_cast<int64_t>(tiles.size()) * n_kv_heads;
  int64_t before = 0;
  int owner = 0;
  for (int64_t task = 0; task < n_tasks; ++task) {
    const int64_t cost = tile_cost[task / n_kv_heads];
    // The midpoint's share, in [0, nth): floor((before + cost / 2) * nth / total).
    const int share = static_cast<int>(
        std::min<int64_t>(nth - 1, (2 * before + cost) * nth / std::max<int64_t>(1, 2 * total)));
    while (owner < share) bounds[++owner] = task;
    before += cost;
  }
  while (owner < nth) bounds[++owner] = n_tasks;
  return bounds;
}

}  // namespace

void write_kv(const KvLayerView& kv, const float* k, const float* v, const int32_t* slots,
              int64_t n_tokens) {
  const int hd = kv.head_dim;
  const int64_t row = static_cast<int64_t>(kv.n_kv_heads) * hd;
  const bool use_avx2 = kernel_isa_has_avx2(kernel_isa());
  for (int64_t t = 0; t < n_tokens; ++t) {
    if (slots[t] < 0) continue;  // padding token: nothing to store
    for (int g = 0; g < kv.n_kv_heads; ++g) {
      const int64_t dst = kv_row_offset(kv, slots[t], g),
                    src = t * row + static_cast<int64_t>(g) * hd;
      if (use_avx2) {  // F16C: the same bits as fp32_to_fp16
        avx2::fp32_to_fp16_row(k + src, kv.k + dst, hd);
        avx2::fp32_to_fp16_row(v + src, kv.v + dst, hd);
        continue;
      }
      for (int i = 0; i < hd; ++i) {
        kv.k[dst + i] = fp32_to_fp16(k[src + i]);
        kv.v[dst + i] = fp32_to_fp16(v[src + i]);
      }
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
  // A long chunk makes at least two tasks per thread.
  const int nth = pool.num_threads();
  const int group = n_heads / kv.n_kv_heads;
  const std::vector<TokenTile> tiles =
      make_tiles(batch, use_avx512 ? kMaxTileTokens : 1, group,
                 use_avx512 ? (2 * nth + kv.n_kv_heads - 1) / kv.n_kv_heads : 1);
  const int64_t n_tasks = static_cast<int64_t>(tiles.size()) * kv.n_kv_heads;
  const std::vector<int64_t> bounds = split_by_cost(tiles, kv.n_kv_heads, batch, nth);
  auto tile_args = [&](int64_t task) {
    const TokenTile& tile = tiles[task / kv.n_kv_heads];
    const int g = static_cast<int>(task % kv.n_kv_heads);
    AttendTileArgs a;
    const int64_t head_offset =
        (tile.first * n_heads + static_cast<int64_t>(g) * group) * kv.head_dim;
    a.q = q + head_offset;
    a.out = out + head_offset;
    a.token_stride = static_cast<int64_t>(n_heads) * kv.head_dim;
    a.num_tokens = tile.num_tokens;
    a.first_num_pos = static_cast<int64_t>(batch.pos[tile.first]) + 1;
    a.block_table = batch.block_tables[batch.seq[tile.first]];
    a.k = kv.k + kv_row_offset(kv, 0, g);
    a.v = kv.v + kv_row_offset(kv, 0, g);
    a.block_stride = kv_row_offset(kv, kv.block_size, 0);  // block 1's first row
    a.block_size = kv.block_size;
    a.group = group;
    a.head_dim = kv.head_dim;
    a.scale = scale;
    return a;
  };
  auto work = [&](int ith, int n_threads) {
    int64_t begin = 0, end = n_tasks;
    if (static_cast<size_t>(n_threads) + 1 == bounds.size()) {
      begin = bounds[ith];
      end = bounds[ith + 1];
    } else if (n_threads > 1) {
      split_range(n_tasks, ith, n_threads, &begin, &end);
    }
    if (!use_avx512) {
      for (int64_t task = begin; task < end; ++task) {
        const TokenTile& tile = tiles[task / kv.n_kv_heads];
        const int g = static_cast<int>(task % kv.n_kv_heads);
        for (int i = 0; i < tile.num_tokens; ++i) {
          attend_group(q, kv, batch, n_heads, scale, out, tile.first + i, g, use_avx2);
        }
      }
      return;
    }
    if (begin >= end) return;
    // Each tile knows the next one, whose first K rows it prefetches.
    AttendTileArgs current = tile_args(begin), next;
    avx512::prefetch_tile_start(current);
    for (int64_t task = begin; task < end; ++task) {
      if (task + 1 < end) {
        next = tile_args(task + 1);
        current.next = &next;
      } else {
        current.next = nullptr;
      }
      avx512::attend_tile(current);
      current = next;
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
        const uint16_t* kr = kv.k + kv_row_offset(kv, slot, g);
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
        const uint16_t* vr = kv.v + kv_row_offset(kv, slot, g);
        for (int i = 0; i < hd; ++i) o[i] += scores[p] * fp16_to_fp32(vr[i]);
      }
    }
  }
}

}  // namespace ref
}  // namespace strata
