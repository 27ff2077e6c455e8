// AVX-512 steps of paged attention (see attention_block.h).
//
// score_block: a block's K rows are converted to fp32 and transposed, 16
// positions at a time, so that one vector holds dimension i of 16
// positions; then every score of a query head is a broadcast-FMA chain over
// the dimensions, position j in lane j: s_hj = scale * fma-sum over
// i = 0, 1, ..., head_dim - 1 of q_hi * k_ji, in that order. No horizontal
// reduction, and the transposed block is shared by the group's heads.
//
// accumulate_block: acc_h[i] = fma(p_hj, v_ji, acc_h[i]) for j in block
// order, four heads at a time, each V row converted once per four heads:
// element for element the same operations as the AVX2 step, so the same
// bits.
#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/attention_block.h"

// GCC 12 reports the deliberately undefined upper lanes inside several
// AVX-512 intrinsics as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace strata::avx512 {
namespace {

constexpr int kLanes = 16;

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
// (positions >= n are zero). hd is a multiple of 16.
void transpose_keys(const AttendBlockArgs& a, int j0, int n, float* kt) {
  const int hd = a.head_dim;
  for (int i0 = 0; i0 < hd; i0 += kLanes) {
    __m512 r[16];
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) {
      r[j] = j < n ? _mm512_cvtph_ps(_mm256_loadu_si256(
                         reinterpret_cast<const __m256i*>(a.k + (j0 + j) * a.row_stride + i0)))
                   : _mm512_setzero_ps();
    }
    transpose16(r);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) _mm512_store_ps(kt + (i0 + i) * kLanes, r[i]);
  }
}

float* transposed_scratch(int hd) {
  thread_local std::vector<float> buffer;
  const size_t floats = static_cast<size_t>(hd) * kLanes + 16;
  if (buffer.size() < floats) buffer.resize(floats);
  const auto addr = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + ((64 - addr % 64) % 64) / sizeof(float);
}

// acc[h + u][i0 + 16 v ...] += sum_j p_(h+u)j v_j[...], u < NH, v < NV.
template <int NH, int NV>
void accumulate_tile(const AttendBlockArgs& a, int h, int i0) {
  const int hd = a.head_dim;
  __m512 o[NH][NV];
#pragma GCC unroll 4
  for (int u = 0; u < NH; ++u)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) o[u][v] = _mm512_loadu_ps(a.acc + (h + u) * hd + i0 + v * kLanes);
  for (int j = 0; j < a.n; ++j) {
    const uint16_t* vr = a.v + j * a.row_stride + i0;
    __m512 vv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      vv[v] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(vr + v * 16)));
    }
#pragma GCC unroll 4
    for (int u = 0; u < NH; ++u) {
      const __m512 p = _mm512_set1_ps(a.scores[(h + u) * a.score_stride + j]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) o[u][v] = _mm512_fmadd_ps(p, vv[v], o[u][v]);
    }
  }
#pragma GCC unroll 4
  for (int u = 0; u < NH; ++u)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) _mm512_storeu_ps(a.acc + (h + u) * hd + i0 + v * kLanes, o[u][v]);
}

}  // namespace

bool attention_supports(int head_dim) {
  return head_dim % kLanes == 0;
}

void score_block(const AttendBlockArgs& a) {
  const int hd = a.head_dim;
  float* kt = transposed_scratch(hd);
  const __m512 scale = _mm512_set1_ps(a.scale);
  for (int j0 = 0; j0 < a.n; j0 += kLanes) {
    const int n = std::min(kLanes, a.n - j0);
    transpose_keys(a, j0, n, kt);
    const auto mask = static_cast<__mmask16>((1u << n) - 1u);
    int h = 0;
    for (; h + 4 <= a.group; h += 4) {
      const float* q0 = a.q + h * hd;
      __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                       _mm512_setzero_ps()};
      for (int i = 0; i < hd; ++i) {
        const __m512 kv = _mm512_load_ps(kt + i * kLanes);
#pragma GCC unroll 4
        for (int u = 0; u < 4; ++u) {
          acc[u] = _mm512_fmadd_ps(_mm512_set1_ps(q0[u * hd + i]), kv, acc[u]);
        }
      }
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        _mm512_mask_storeu_ps(a.scores + (h + u) * a.score_stride + j0, mask,
                              _mm512_mul_ps(acc[u], scale));
      }
    }
    for (; h < a.group; ++h) {
      const float* qh = a.q + h * hd;
      __m512 acc = _mm512_setzero_ps();
      for (int i = 0; i < hd; ++i) {
        acc = _mm512_fmadd_ps(_mm512_set1_ps(qh[i]), _mm512_load_ps(kt + i * kLanes), acc);
      }
      _mm512_mask_storeu_ps(a.scores + h * a.score_stride + j0, mask, _mm512_mul_ps(acc, scale));
    }
  }
}

void accumulate_block(const AttendBlockArgs& a) {
  const int hd = a.head_dim;
  // Up to four heads x 64 dimensions (four vectors each) in registers.
  for (int i0 = 0; i0 < hd; i0 += 4 * kLanes) {
    const int nv = std::min(4, (hd - i0) / kLanes);
    for (int h = 0; h < a.group; h += 4) {
      const int nh = std::min(4, a.group - h);
      if (nh == 4 && nv == 4) {
        accumulate_tile<4, 4>(a, h, i0);
      } else {
        for (int u = 0; u < nh; ++u) {
          for (int v = 0; v < nv; ++v) accumulate_tile<1, 1>(a, h + u, i0 + v * kLanes);
        }
      }
    }
  }
}

}  // namespace strata::avx512
