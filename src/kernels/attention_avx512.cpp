// AVX-512 paged attention over tiles (see attention_block.h).
//
// A tile is T consecutive tokens of one sequence times the `group` query
// heads of one KV head: R = T * group rows (T = 1 for a decode). Three
// steps, each sharing its K/V work among all R rows:
//
// scores: K rows are converted to fp32 and transposed once per window of
// 32 positions, so that one vector holds dimension i of 16 positions; then
// each row's scores are broadcast-FMA chains over the dimensions, position
// j in lane j: s_rj = scale * fma-sum over i = 0, 1, ..., head_dim - 1 of
// q_ri * k_ji, in that order, from 0; up to 13 rows x 2 vectors at a time.
// Lanes past a row's last position are computed but neither stored nor
// counted in the row's maximum (token t attends positions <= pos[t] only).
//
// softmax: per row, exps and their sum exactly as avx2::softmax_weights
// forms them (same exp polynomial lane by lane, the fp32 sum of each 8
// exps in hsum8's order, those added to a double in position order); the
// normalization to fp16 weights happens span by span in the values step.
//
// values: V rows are converted to fp32 once per span of up to 64
// positions (an L1 scratch); then acc_r[i] = fma(p_rj, v_ji, acc_r[i]) for
// j in position order, six rows x 64 dimensions in registers. Positions
// that only the later tokens of the tile attend (the end of a chunk) run
// per row after the shared ones, still in position order.
//
// Prefetching: K, then V, then the next tile's first K rows are asked for
// (into L2) 128 positions ahead of use, the requests spread over the score
// and value loops (see PrefetchQueue).
//
// Every output value is computed by the same operations in the same order
// whatever the tile, so a token gives the same bits alone or in a chunk.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/attention_block.h"
#include "kernels/simd_math_avx2.h"

// GCC 12 reports the deliberately undefined upper lanes inside several
// AVX-512 intrinsics as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace strata::avx512 {
namespace {

constexpr int kLanes = 16;
constexpr int kWindow = 2 * kLanes;  // positions per score step
constexpr int kMaxScoreRows = 13;    // rows x 2 vectors of accumulators in the score step
constexpr int kMaxValueRows = 6;     // rows x 4 vectors of the value step

// KV rows to prefetch, issued one row per step of the compute loops. In a
// model's step every layer's K/V comes from DRAM; issued as one burst per
// window or span (32-64 rows), the prefetches fill the L1 miss buffers and
// the core waits for DRAM anyway (measured: no better than no prefetching),
// while the same requests spread over the FMA loops overlap with them.
// bench_kernels BM_PagedAttention layers:22 (2 threads): 64 decodes at ctx
// 100 68 -> 137 GFLOP/s; ctx 3000, 8-token chunk + 8 decodes 206 -> 290;
// K/V in cache (layers:1) unchanged. With slot-major KV blocks T0 beat T1 by
// 10-20% and 64 positions ahead beat 32 and 128; since a KV head's slots are
// contiguous in a block (attention.h), into L2 (T1) 128 positions ahead is
// best on Zen 4: a decode over 22 layers at ctx 2048 0.69x the time of T0 64
// ahead (T1 64: 0.77x, T1 256: 0.72x, T2 128: 0.78x; 5 alternated rounds),
// at ctx 4000 0.66x; prefill chunks, mixed steps and K/V in cache 0.97-1.01x.
struct PrefetchQueue {
  std::vector<const char*> storage;
  const char** rows = nullptr;  // queued KV rows, row_bytes each
  int size = 0;
  int next = 0;
  int row_bytes = 0;

  // Empties the queue, with room for `capacity` rows of `bytes`.
  void clear(int capacity, int bytes) {
    if (storage.size() < static_cast<size_t>(capacity)) storage.resize(capacity);
    rows = storage.data();
    size = next = 0;
    row_bytes = bytes;
  }
  void push(const char* row) { rows[size++] = row; }
  // One row per step of the loop that drains the queue.
  inline void step() {
    if (next < size) {
      const char* row = rows[next++];
      for (int b = 0; b < row_bytes; b += 64) _mm_prefetch(row + b, _MM_HINT_T1);
    }
  }
  void flush() {
    while (next < size) step();
  }
};

// 16x16 fp32 transpose in registers: r[i] lane j <- r[j] lane i.
inline void transpose16(__m512* r) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] =
        _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(
        _mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(
        _mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  // r[4q + c] now holds, in 128-bit lane L, column c of rows 4L'..: for row
  // group q (rows 4q..4q+3) and lane L (columns 4L + c).
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    const __m512 a = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);  // lanes 0,2 | 0,2
    const __m512 b = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xDD);  // lanes 1,3 | 1,3
    const __m512 cc = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    const __m512 d = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xDD);
    t[c] = _mm512_shuffle_f32x4(a, cc, 0x88);      // column c
    t[8 + c] = _mm512_shuffle_f32x4(a, cc, 0xDD);  // column 8 + c
    t[4 + c] = _mm512_shuffle_f32x4(b, d, 0x88);   // column 4 + c
    t[12 + c] = _mm512_shuffle_f32x4(b, d, 0xDD);  // column 12 + c
  }
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = t[i];
}

// kt[i][j] = K[j][i] for dimension i in [0, hd), position j in [0, 16)
// (positions >= n are zero), K row j at rows[j]; kt's dimension stride is
// kWindow floats. hd is a multiple of 16.
void transpose_keys(const uint16_t* const* rows, int n, int hd, float* kt) {
  for (int i0 = 0; i0 < hd; i0 += kLanes) {
    __m512 r[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      r[j] =
          j < n
              ? _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[j] + i0)))
              : _mm512_setzero_ps();
    }
    transpose16(r);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) _mm512_store_ps(kt + (i0 + i) * kWindow, r[i]);
  }
}

// Scores of NR rows for the 32 positions of a window: q (fp16-rounded) of
// row u, dimension i at q[i * NR + u]; K transposed in kt ([hd][32]); row
// u's first n_store[u] scores stored at s[u] and folded into its running
// maximum (16 lanes at row_max + 16 u).
template <int NR>
void score_rows(const float* q, const float* kt, int hd, float scale, float* const* s,
                const int* n_store, float* row_max, PrefetchQueue* pf) {
  __m512 acc[NR][2];
#pragma GCC unroll 16
  for (int u = 0; u < NR; ++u) acc[u][0] = acc[u][1] = _mm512_setzero_ps();
  for (int i = 0; i < hd; ++i) {
    const __m512 k0 = _mm512_load_ps(kt + i * kWindow);
    const __m512 k1 = _mm512_load_ps(kt + i * kWindow + kLanes);
    if (pf != nullptr) pf->step();
    const float* qi = q + i * NR;
#pragma GCC unroll 16
    for (int u = 0; u < NR; ++u) {
      const __m512 qb = _mm512_set1_ps(qi[u]);
      acc[u][0] = _mm512_fmadd_ps(qb, k0, acc[u][0]);
      acc[u][1] = _mm512_fmadd_ps(qb, k1, acc[u][1]);
    }
  }
  const __m512 vscale = _mm512_set1_ps(scale);
#pragma GCC unroll 16
  for (int u = 0; u < NR; ++u) {
    const uint32_t bits = n_store[u] >= kWindow ? ~0u : (1u << n_store[u]) - 1u;
    const auto m0 = static_cast<__mmask16>(bits), m1 = static_cast<__mmask16>(bits >> 16);
    const __m512 s0 = _mm512_mul_ps(acc[u][0], vscale);
    const __m512 s1 = _mm512_mul_ps(acc[u][1], vscale);
    _mm512_mask_storeu_ps(s[u], m0, s0);
    _mm512_mask_storeu_ps(s[u] + kLanes, m1, s1);
    float* m = row_max + u * kLanes;
    __m512 mv = _mm512_load_ps(m);
    mv = _mm512_mask_max_ps(mv, m0, mv, s0);
    _mm512_store_ps(m, _mm512_mask_max_ps(mv, m1, mv, s1));
  }
}

using ScoreRowsFn = void (*)(const float*, const float*, int, float, float* const*, const int*,
                             float*, PrefetchQueue*);

template <size_t... I>
constexpr std::array<ScoreRowsFn, sizeof...(I)> score_table(std::index_sequence<I...>) {
  return {&score_rows<static_cast<int>(I) + 1>...};
}
constexpr auto kScoreRows = score_table(std::make_index_sequence<kMaxScoreRows>());

// acc[u][i0 + 16 v ...] = fma(p_u[j], v_j[...], acc) for j in [j0, j1), u <
// NR, v < NV; V row j (fp32) at vf + j * hd.
template <int NR, int NV>
void value_rows(float* const* acc, const float* const* p, const float* vf, int hd, int i0, int j0,
                int j1, PrefetchQueue* pf) {
  __m512 o[NR][NV];
#pragma GCC unroll 6
  for (int u = 0; u < NR; ++u)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) o[u][v] = _mm512_loadu_ps(acc[u] + i0 + v * kLanes);
  for (int j = j0; j < j1; ++j) {
    const float* vr = vf + j * hd + i0;
    if (pf != nullptr) pf->step();
    __m512 vv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) vv[v] = _mm512_load_ps(vr + v * kLanes);
#pragma GCC unroll 6
    for (int u = 0; u < NR; ++u) {
      const __m512 pj = _mm512_set1_ps(p[u][j]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) o[u][v] = _mm512_fmadd_ps(pj, vv[v], o[u][v]);
    }
  }
#pragma GCC unroll 6
  for (int u = 0; u < NR; ++u)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(acc[u] + i0 + v * kLanes, o[u][v]);
}

using ValueRowsFn = void (*)(float* const*, const float* const*, const float*, int, int, int, int,
                             PrefetchQueue*);

template <int NV, size_t... I>
constexpr std::array<ValueRowsFn, sizeof...(I)> value_table_nv(std::index_sequence<I...>) {
  return {&value_rows<static_cast<int>(I) + 1, NV>...};
}
// kValueRows[nv - 1][nr - 1]
constexpr std::array<std::array<ValueRowsFn, kMaxValueRows>, 4> kValueRows = {
    value_table_nv<1>(std::make_index_sequence<kMaxValueRows>()),
    value_table_nv<2>(std::make_index_sequence<kMaxValueRows>()),
    value_table_nv<3>(std::make_index_sequence<kMaxValueRows>()),
    value_table_nv<4>(std::make_index_sequence<kMaxValueRows>())};

// The value step of nr rows (nr <= kMaxValueRows) for positions [j0, j1)
// of a block, over dimensions [0, hd); pf (if any) drained one row per
// position of the first 64 dimensions' loop.
void value_step(float* const* acc, const float* const* p, const float* vf, int hd, int nr, int j0,
                int j1, PrefetchQueue* pf) {
  if (j0 >= j1) return;
  for (int i0 = 0; i0 < hd; i0 += 4 * kLanes) {
    const int nv = std::min(4, (hd - i0) / kLanes);
    kValueRows[nv - 1][nr - 1](acc, p, vf, hd, i0, j0, j1, i0 == 0 ? pf : nullptr);
  }
}

// value_step over rows [r_begin, r_end) in near-equal groups of at most
// kMaxValueRows (so no group is left with too few accumulators to hide
// the FMA latency).
void value_rows_split(float* const* acc, const float* const* p, const float* vf, int hd,
                      int r_begin, int r_end, int j0, int j1, PrefetchQueue* pf = nullptr) {
  const int n = r_end - r_begin;
  if (n <= 0 || j0 >= j1) return;
  const int n_groups = (n + kMaxValueRows - 1) / kMaxValueRows;
  for (int g = 0; g < n_groups; ++g) {
    const int r0 = r_begin + n * g / n_groups, r1 = r_begin + n * (g + 1) / n_groups;
    value_step(acc + r0, p + r0, vf, hd, r1 - r0, j0, j1, g == 0 ? pf : nullptr);
  }
}

// The AVX2 exp256 on 16 lanes: the same operations, lane by lane.
inline __m512 exp512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3365447504f)),
                    _mm512_set1_ps(88.3762626647949f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512i e =
      _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

// The AVX2 8-lane horizontal sum ((lo + hi), then lanes 0+2 and 1+3, then
// 0+1) of each 256-bit half: lane 0 holds the sum of lanes 0..7, lane 8 the
// sum of lanes 8..15.
inline __m512 hsum_halves(__m512 e) {
  __m512 s = _mm512_add_ps(e, _mm512_shuffle_f32x4(e, e, _MM_SHUFFLE(2, 3, 0, 1)));
  s = _mm512_add_ps(s, _mm512_permute_ps(s, _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(s, _mm512_movehdup_ps(s));
}

inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The 16 sums of 8 consecutive exps in e[0..7] (128 positions), each
// formed by hsum8's tree ((x0 + x4) + (x2 + x6)) + ((x1 + x5) + (x3 + x7)),
// reduced for all 16 groups together; stored in position order as doubles.
inline __m512 group_sums_shuffled(const __m512* e) {
  // Group g holds positions 8g..8g+7: 128-bit lanes 2(g % 2), 2(g % 2) + 1
  // of e[g / 2]. Step 1, x_i + x_(i+4): four groups per vector, group 4m + L
  // in 128-bit lane L of s1[m].
  __m512 s1[4];
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    const __m512 lo = _mm512_shuffle_f32x4(e[2 * m], e[2 * m + 1], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 hi = _mm512_shuffle_f32x4(e[2 * m], e[2 * m + 1], _MM_SHUFFLE(3, 1, 3, 1));
    s1[m] = _mm512_add_ps(lo, hi);
  }
  // Step 2, (a0 + a2, a1 + a3): lane L of s2[n] holds groups 8n + L (first
  // two floats) and 8n + 4 + L (last two).
  __m512 s2[2];
#pragma GCC unroll 2
  for (int n = 0; n < 2; ++n) {
    const __m512 a = _mm512_shuffle_ps(s1[2 * n], s1[2 * n + 1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512 b = _mm512_shuffle_ps(s1[2 * n], s1[2 * n + 1], _MM_SHUFFLE(3, 2, 3, 2));
    s2[n] = _mm512_add_ps(a, b);
  }
  // Step 3, b0 + b1: float 4L + k holds group 4k + L.
  const __m512 even = _mm512_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(2, 0, 2, 0));
  const __m512 odd = _mm512_shuffle_ps(s2[0], s2[1], _MM_SHUFFLE(3, 1, 3, 1));
  return _mm512_add_ps(even, odd);
}

// sum_groups_of_8 without the final reordering: float 4L + k holds the sum
// of group 4k + L.
inline void sum_groups_of_8(const __m512* e, double* sums) {
  const __m512 c = group_sums_shuffled(e);
  // Into position order: group g from float 4 (g % 4) + g / 4.
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512 sorted = _mm512_permutexvar_ps(order, c);
  _mm512_store_pd(sums, _mm512_cvtps_pd(_mm512_castps512_ps256(sorted)));
  _mm512_store_pd(
      sums + 8,
      _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(sorted), 1))));
}

// Exps of kRows rows of n scores in place (row r at s + r * stride, its
// maximum max_score[r]); sum[r] = their sum as avx2::softmax_weights forms
// it: each 8 consecutive exps summed in fp32 by hsum8's tree, those partial
// sums added to a double in position order. Rows interleave so that the
// double additions of different rows overlap.
template <int kRows>
void exp_sum_rows(float* s, int64_t stride, int64_t n, const float* max_score, double* sum) {
  double acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = 0.0;
  int64_t j = 0;
  if constexpr (kRows == 4) {
    // The four rows' double sums side by side in one vector (lane r), so
    // the sixteen in-order additions per 128 positions serve four rows.
    __m256d acc4 = _mm256_setzero_pd();
    for (; j + 8 * kLanes <= n; j += 8 * kLanes) {
      __m512 c[4];
#pragma GCC unroll 4
      for (int r = 0; r < 4; ++r) {
        float* row = s + r * stride;
        __m512 e[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) {
          e[k] = exp512(
              _mm512_sub_ps(_mm512_loadu_ps(row + j + k * kLanes), _mm512_set1_ps(max_score[r])));
          _mm512_storeu_ps(row + j + k * kLanes, e[k]);
        }
        c[r] = group_sums_shuffled(e);
      }
      // 4x16 transpose: 128-bit lane L of u[k] = the rows' sums of group 4k + L.
      const __m512 t0 = _mm512_unpacklo_ps(c[0], c[1]), t1 = _mm512_unpackhi_ps(c[0], c[1]);
      const __m512 t2 = _mm512_unpacklo_ps(c[2], c[3]), t3 = _mm512_unpackhi_ps(c[2], c[3]);
      __m512 u[4];
      u[0] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
      u[1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t0), _mm512_castps_pd(t2)));
      u[2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
      u[3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t1), _mm512_castps_pd(t3)));
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        acc4 = _mm256_add_pd(acc4, _mm256_cvtps_pd(_mm512_castps512_ps128(u[k])));
        acc4 = _mm256_add_pd(acc4, _mm256_cvtps_pd(_mm512_extractf32x4_ps(u[k], 1)));
        acc4 = _mm256_add_pd(acc4, _mm256_cvtps_pd(_mm512_extractf32x4_ps(u[k], 2)));
        acc4 = _mm256_add_pd(acc4, _mm256_cvtps_pd(_mm512_extractf32x4_ps(u[k], 3)));
      }
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, acc4);
    for (int r = 0; r < 4; ++r) acc[r] = lanes[r];
  }
  for (; j + 8 * kLanes <= n; j += 8 * kLanes) {
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      float* row = s + r * stride;
      __m512 e[8];
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        e[k] = exp512(
            _mm512_sub_ps(_mm512_loadu_ps(row + j + k * kLanes), _mm512_set1_ps(max_score[r])));
        _mm512_storeu_ps(row + j + k * kLanes, e[k]);
      }
      alignas(64) double group_sums[16];
      sum_groups_of_8(e, group_sums);
#pragma GCC unroll 16
      for (int g = 0; g < 16; ++g) acc[r] += group_sums[g];
    }
  }
  for (; j + kLanes <= n; j += kLanes) {
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) {
      float* row = s + r * stride;
      const __m512 e =
          exp512(_mm512_sub_ps(_mm512_loadu_ps(row + j), _mm512_set1_ps(max_score[r])));
      _mm512_storeu_ps(row + j, e);
      const __m512 h = hsum_halves(e);
      acc[r] += _mm512_cvtss_f32(h);
      acc[r] += _mm_cvtss_f32(_mm512_extractf32x4_ps(h, 2));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    float* row = s + r * stride;
    int64_t jr = j;
    if (jr + 8 <= n) {
      const __m256 e =
          avx2::exp256(_mm256_sub_ps(_mm256_loadu_ps(row + jr), _mm256_set1_ps(max_score[r])));
      _mm256_storeu_ps(row + jr, e);
      acc[r] += hsum8(e);
      jr += 8;
    }
    for (; jr < n; ++jr) {
      row[jr] = std::exp(row[jr] - max_score[r]);
      acc[r] += row[jr];
    }
    sum[r] = acc[r];
  }
}

void exp_sum(float* s, int64_t stride, int rows, int64_t n, const float* max_score, double* sum) {
  int r = 0;
  for (; r + 4 <= rows; r += 4) exp_sum_rows<4>(s + r * stride, stride, n, max_score + r, sum + r);
  for (; r + 2 <= rows; r += 2) exp_sum_rows<2>(s + r * stride, stride, n, max_score + r, sum + r);
  for (; r < rows; ++r) exp_sum_rows<1>(s + r * stride, stride, n, max_score + r, sum + r);
}

// s[j] = fp16-rounded s[j] * inv_sum for j < n (lane for lane what the AVX2
// step and its scalar tail compute).
inline void normalize(float* s, int64_t n, float inv_sum) {
  const __m512 vinv = _mm512_set1_ps(inv_sum);
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const __m512 w = _mm512_mul_ps(_mm512_loadu_ps(s + j), vinv);
    _mm512_storeu_ps(s + j, _mm512_cvtph_ps(_mm512_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT)));
  }
  if (j < n) {
    const auto mask = static_cast<__mmask16>((1u << (n - j)) - 1u);
    const __m512 w = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask, s + j), vinv);
    _mm512_mask_storeu_ps(s + j, mask,
                          _mm512_cvtph_ps(_mm512_cvtps_ph(w, _MM_FROUND_TO_NEAREST_INT)));
  }
}

// Appends the lines of the KV head's rows at positions [p_begin, p_end)
// of K or V (base a.k or a.v): blocks sit anywhere in the pool, beyond
// what the hardware prefetchers follow, and in a model's step (every
// layer's K/V) they come from DRAM.
inline void queue_rows(const uint16_t* base, const AttendTileArgs& a, int64_t p_begin,
                       int64_t p_end, PrefetchQueue* pf) {
  if (p_begin >= p_end) return;
  const int bs = a.block_size;
  int64_t block = p_begin / bs;
  int offset = static_cast<int>(p_begin - block * bs);
  const uint16_t* rows = base + static_cast<int64_t>(a.block_table[block]) * a.block_stride;
  for (int64_t p = p_begin; p < p_end; ++p) {
    pf->push(reinterpret_cast<const char*>(rows + offset * a.head_dim));
    if (++offset == bs && p + 1 < p_end) {
      offset = 0;
      rows = base + static_cast<int64_t>(a.block_table[++block]) * a.block_stride;
    }
  }
}

// The rows a tile reads, in order, form one stream: K at positions
// [0, max_pos), then V at [0, max_pos), then the first kPrefetchPositions
// K positions of the next tile (a.next), which that tile does not ask for
// itself. Both passes ask for the stream kPrefetchPositions ahead of where
// they read (so the score pass's last windows ask for the first V rows and
// the value pass's last span for the next tile's first K rows: a short
// decode is not read cold); this queues its part [x_begin, x_end).
constexpr int64_t kPrefetchPositions = 4 * kWindow;
void queue_stream(const AttendTileArgs& a, int64_t x_begin, int64_t x_end, PrefetchQueue* pf) {
  pf->clear(static_cast<int>(x_end - x_begin), a.head_dim * 2);
  const int64_t max_pos = a.first_num_pos + a.num_tokens - 1;
  auto part = [&](int64_t origin, int64_t len, int64_t* b, int64_t* e) {
    *b = std::clamp<int64_t>(x_begin - origin, 0, len);
    *e = std::clamp<int64_t>(x_end - origin, 0, len);
  };
  int64_t b, e;
  part(0, max_pos, &b, &e);
  queue_rows(a.k, a, b, e, pf);
  part(max_pos, max_pos, &b, &e);
  queue_rows(a.v, a, b, e, pf);
  if (a.next != nullptr) {
    const AttendTileArgs& n = *a.next;
    part(2 * max_pos, std::min(kPrefetchPositions, n.first_num_pos + n.num_tokens - 1), &b, &e);
    queue_rows(n.k, n, b, e, pf);
  }
}

// V positions converted to fp32 per value step: whole blocks, up to this
// many positions (at least one block).
constexpr int kSpanPositions = 64;

// Per-thread scratch of attend_tile, 64-byte aligned pieces.
struct TileScratch {
  std::vector<float> buffer;
  float* q16 = nullptr;      // per score chunk [hd][chunk rows]
  float* scores = nullptr;   // [rows][score_stride]
  float* row_max = nullptr;  // [rows][16]
  float* kt = nullptr;       // [hd][32]
  float* vf = nullptr;       // [span][hd]
  std::vector<float*> out_rows;
  std::vector<const float*> p_rows;
  std::vector<float*> s_rows;
  std::vector<int> n_rows;
  std::vector<int> row_token;  // row r belongs to tile token row_token[r]
  std::vector<float> max_score;
  std::vector<double> sum;
  PrefetchQueue prefetch;

  void reserve(int rows, int hd, int64_t score_stride, int span) {
    auto round16 = [](size_t f) { return (f + 15) / 16 * 16; };
    const size_t q_floats = round16(static_cast<size_t>(rows) * hd);
    const size_t score_floats = round16(static_cast<size_t>(rows) * score_stride);
    const size_t max_floats = static_cast<size_t>(rows) * kLanes;
    const size_t kt_floats = static_cast<size_t>(hd) * kWindow;
    const size_t vf_floats = static_cast<size_t>(span) * hd;
    const size_t total = q_floats + score_floats + max_floats + kt_floats + vf_floats + 16;
    if (buffer.size() < total) buffer.resize(total);
    const auto addr = reinterpret_cast<uintptr_t>(buffer.data());
    q16 = buffer.data() + ((64 - addr % 64) % 64) / sizeof(float);
    scores = q16 + q_floats;
    row_max = scores + score_floats;
    kt = row_max + max_floats;
    vf = kt + kt_floats;
    out_rows.resize(rows);
    p_rows.resize(rows);
    s_rows.resize(rows);
    n_rows.resize(rows);
    row_token.resize(rows);
    max_score.resize(rows);
    sum.resize(rows);
  }
};

}  // namespace

void prefetch_tile_start(const AttendTileArgs& a) {
  thread_local PrefetchQueue pf;
  pf.clear(static_cast<int>(kPrefetchPositions), a.head_dim * 2);
  queue_rows(a.k, a, 0, std::min(kPrefetchPositions, a.first_num_pos + a.num_tokens - 1), &pf);
  pf.flush();
}

bool attention_supports(int head_dim) {
  return head_dim % kLanes == 0;
}

void softmax_weights_rows(float* s, int64_t stride, int rows, int64_t n) {
  std::vector<float> max_score(rows);
  std::vector<double> sum(rows);
  for (int r = 0; r < rows; ++r) {
    const float* row = s + r * stride;
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes) vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(row + j));
    float m = _mm512_reduce_max_ps(vmax);
    for (; j < n; ++j) m = std::max(m, row[j]);
    max_score[r] = m;
  }
  exp_sum(s, stride, rows, n, max_score.data(), sum.data());
  for (int r = 0; r < rows; ++r) normalize(s + r * stride, n, static_cast<float>(1.0 / sum[r]));
}

void attend_tile(const AttendTileArgs& a) {
  const int hd = a.head_dim, bs = a.block_size, group = a.group, T = a.num_tokens;
  const int rows = T * group;
  // Positions attended by the last token: [0, max_pos).
  const int64_t max_pos = a.first_num_pos + T - 1;
  const int64_t score_stride = (max_pos + kWindow - 1) / kWindow * kWindow;
  const int span_blocks = std::max(1, kSpanPositions / bs);
  thread_local TileScratch scratch;
  scratch.reserve(rows, hd, score_stride, span_blocks * bs);
  float* scores = scratch.scores;
  float** out_rows = scratch.out_rows.data();
  const int* row_token = scratch.row_token.data();
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < group; ++h) scratch.row_token[t * group + h] = t;
  }
  const float** p_rows = scratch.p_rows.data();

  // Score chunks: rows [chunk_begin(c), chunk_begin(c + 1)), near-equal
  // sizes of at most kMaxScoreRows; chunk c's q rounded to fp16 at
  // q16 + chunk_begin(c) * hd, dimension-major.
  const int n_chunks = (rows + kMaxScoreRows - 1) / kMaxScoreRows;
  auto chunk_begin = [&](int c) { return rows * c / n_chunks; };
  for (int c = 0; c < n_chunks; ++c) {
    const int r0 = chunk_begin(c), nr = chunk_begin(c + 1) - r0;
    float* qc = scratch.q16 + r0 * hd;
    for (int u = 0; u < nr; ++u) {
      const int t = row_token[r0 + u], h = r0 + u - t * group;
      const float* src = a.q + t * a.token_stride + h * hd;
      alignas(64) float rounded[kLanes];
      for (int i0 = 0; i0 < hd; i0 += kLanes) {
        _mm512_store_ps(rounded, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_loadu_ps(src + i0),
                                                                 _MM_FROUND_TO_NEAREST_INT)));
        for (int i = 0; i < kLanes; ++i) qc[(i0 + i) * nr + u] = rounded[i];
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    out_rows[r] = a.out + row_token[r] * a.token_stride + (r - row_token[r] * group) * hd;
    std::fill(out_rows[r], out_rows[r] + hd, 0.0f);
    _mm512_store_ps(scratch.row_max + r * kLanes, _mm512_set1_ps(-INFINITY));
  }
  // Token t attends positions [0, first_num_pos + t): at position p, the
  // tokens from first_active(p) on still have positions there.
  auto first_active = [&](int64_t p) {
    return static_cast<int>(std::max<int64_t>(0, p - a.first_num_pos + 1));
  };
  // Positions of token t in [p, p + n).
  auto n_at = [&](int t, int64_t p, int n) {
    return static_cast<int>(std::clamp<int64_t>(a.first_num_pos + t - p, 0, n));
  };

  // Pass 1: scores, and each row's maximum, a window of 32 positions at a
  // time (K rows from one or more blocks, found by walking the block
  // table). The stream is asked for kPrefetchPositions ahead, spread over
  // the window's first score step.
  const uint16_t* key_rows[kWindow];
  PrefetchQueue& pf = scratch.prefetch;
  for (int64_t w0 = 0; w0 < max_pos; w0 += kWindow) {
    const int nw = static_cast<int>(std::min<int64_t>(kWindow, max_pos - w0));
    {
      int64_t block = w0 / bs;
      int offset = static_cast<int>(w0 - block * bs);
      const uint16_t* base = a.k + static_cast<int64_t>(a.block_table[block]) * a.block_stride;
      for (int j = 0; j < nw; ++j) {
        key_rows[j] = base + offset * hd;
        if (++offset == bs && j + 1 < nw) {
          offset = 0;
          base = a.k + static_cast<int64_t>(a.block_table[++block]) * a.block_stride;
        }
      }
    }
    queue_stream(a, w0 + kPrefetchPositions, w0 + nw + kPrefetchPositions, &pf);
    transpose_keys(key_rows, std::min(kLanes, nw), hd, scratch.kt);
    transpose_keys(key_rows + kLanes, nw - kLanes, hd, scratch.kt + kLanes);
    const int r_begin = first_active(w0) * group;
    for (int c = 0; c < n_chunks; ++c) {
      const int r0 = chunk_begin(c), nr = chunk_begin(c + 1) - r0;
      if (r0 + nr <= r_begin) continue;  // no row of the chunk attends here
      float** s_rows = scratch.s_rows.data();
      int* n_rows = scratch.n_rows.data();
      for (int u = 0; u < nr; ++u) {
        s_rows[u] = scores + (r0 + u) * score_stride + w0;
        n_rows[u] = n_at(row_token[r0 + u], w0, nw);
      }
      kScoreRows[nr - 1](scratch.q16 + r0 * hd, scratch.kt, hd, a.scale, s_rows, n_rows,
                         scratch.row_max + r0 * kLanes, &pf);
    }
    pf.flush();
  }

  // Exps and their sums, row by row over the row's own positions.
  for (int r = 0; r < rows; ++r) {
    scratch.max_score[r] = _mm512_reduce_max_ps(_mm512_load_ps(scratch.row_max + r * kLanes));
  }
  for (int t = 0; t < T; ++t) {
    exp_sum(scores + t * group * score_stride, score_stride, group, a.first_num_pos + t,
            scratch.max_score.data() + t * group, scratch.sum.data() + t * group);
  }
  float* inv_sum = scratch.max_score.data();  // reused
  for (int r = 0; r < rows; ++r) inv_sum[r] = static_cast<float>(1.0 / scratch.sum[r]);

  // Pass 2: values, a span of whole blocks at a time.
  for (int64_t p0 = 0; p0 < max_pos; p0 += static_cast<int64_t>(span_blocks) * bs) {
    const int len = static_cast<int>(std::min<int64_t>(span_blocks * bs, max_pos - p0));
    for (int b0 = 0; b0 < len; b0 += bs) {
      const int nb = std::min(bs, len - b0);
      const uint16_t* vb =
          a.v + static_cast<int64_t>(a.block_table[(p0 + b0) / bs]) * a.block_stride;
      // The block's nb rows of this KV head are contiguous.
      float* vf = scratch.vf + b0 * hd;
      const int count = nb * hd;
      for (int i = 0; i < count; i += kLanes) {
        _mm512_store_ps(
            vf + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vb + i))));
      }
    }
    queue_stream(a, max_pos + p0 + kPrefetchPositions, max_pos + p0 + len + kPrefetchPositions,
                 &pf);
    const int t_begin = first_active(p0);
    const int r_begin = t_begin * group;
    // The weights of the span: fp16(e * inv_sum), each row over its own
    // positions.
    for (int r = r_begin; r < rows; ++r) {
      float* p = scores + r * score_stride + p0;
      normalize(p, n_at(row_token[r], p0, len), inv_sum[r]);
      p_rows[r] = p;
    }
    // Positions [0, n_common) of the span are attended by every active token.
    const int n_common = n_at(t_begin, p0, len);
    value_rows_split(out_rows, p_rows, scratch.vf, hd, r_begin, rows, 0, n_common, &pf);
    // The rest: each row's own positions, still in order.
    for (int t = t_begin; t < T; ++t) {
      const int n_t = n_at(t, p0, len);
      if (n_t <= n_common) continue;
      value_rows_split(out_rows, p_rows, scratch.vf, hd, t * group, (t + 1) * group, n_common, n_t);
    }
    pf.flush();
  }
}

}  // namespace strata::avx512
