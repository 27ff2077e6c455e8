// AVX-512 FMA matmul for F32 / F16 / BF16 weights; see the header for the
// rounding order. Two paths, one order (which runs when: kWideCols below):
// - Few tokens (decode, verify steps, batched decode; every n of wide
//   F16 / BF16 rows): a register tile is 4 weight rows x up to 6 tokens
//   read in place; each 16-column step loads (and widens) four weight
//   vectors and up to six activation vectors and issues up to 24 FMAs,
//   while the next row tile is prefetched. Tokens are walked in chunks
//   whose activations stay in L2 while a thread's rows stream past.
// - Many tokens (F32 prefill, F16 / BF16 prefill of short rows): each 8-row
//   tile is widened to fp32 once per token chunk and walked in blocks of
//   kBlockCols columns, small enough to stay in L1 while every token tile
//   of the chunk passes over them; a register tile is 8 rows x 3 tokens, so
//   a 16-column step reads 3 activation lines from L2 and 8 weight lines
//   from L1 for 24 FMAs (the 4 x 6 tile reads 10 lines from L2). The 24
//   accumulators are saved between column blocks and resumed, so each lane
//   still sums its columns in k order.
#include "kernels/matmul_float_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "kernels/matmul_avx2.h"
#include "util/thread_pool.h"

// GCC 12 reports the deliberately undefined upper lanes inside several
// AVX-512 intrinsics as uninitialized.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace strata::avx512_float {
namespace {

constexpr int kRows = 4;  // weight rows per register tile
static_assert(kRowShare == kRows, "threads get whole register tiles");
constexpr int kTokens = 6;  // tokens per register tile
// Activation bytes a token chunk may take (about half of a Zen L2).
constexpr size_t kChunkBytes = size_t{512} << 10;
// The many-token path: 8 rows x 3 tokens a register tile, 512 columns a
// block (8 rows x 2 KiB of fp32 weights = 16 KiB, half of the smallest L1
// among the CPUs served), and chunks of up to 1 MiB of activations, so
// that a row tile is widened once per 128 tokens of a 2048-wide input
// (chosen on Zen 5 from F16 matmuls of the 1.1B shapes at n = 512, 2
// threads, alternated in one process against 256 KiB - 4 MiB chunks and
// 256 - 1024 column blocks; build/bench_kernels
// --benchmark_filter='BM_Matmul/type:1/.*n:512' measures this setting).
constexpr int kBlockRows = 8;
constexpr int kBlockTokens = 3;
constexpr int64_t kBlockCols = 512;
constexpr size_t kBlockChunkBytes = size_t{1} << 20;
// Which path runs n tokens. F32 weights take the many-token one above
// 2 x kTokens. F16 / BF16 weights pay for widening a row tile to fp32 only
// when the rows are short and the tokens many: the few-token path converts
// its 4 rows (16 KiB at 2048 columns) on the fly from L1 for each token tile
// and skips the widening pass and the saved accumulators. Measured on Zen 5,
// 2 threads (build/bench_kernels --benchmark_filter='BM_Matmul/type:1/',
// both paths alternated): 5632 x 2048 F16 n = 13 / 16 / 32 / 64 / 512 took
// 2.2 / 2.3 / 4.1 / 7.0 / 41-46 ms on the many-token path and 1.3 / 1.2 /
// 2.7 / 5.2 / 43-44 on the few-token one (BF16 n = 512: 43-44 vs 38-41); at
// 256-512 columns the many-token path wins from about n = 80 (4096 x 256:
// 0.47-0.52 vs 0.57-0.58 ms), at 1024 columns the two are within noise.
constexpr int64_t kFewTokenMaxF32 = 2 * kTokens;
constexpr int64_t kFewTokenMaxNarrow = 48;  // F16 / BF16 rows of < kWideCols
constexpr int64_t kWideCols = 1536;         // F16 / BF16: the few-token path at every n

struct LoadF32 {
  static constexpr int kElemBytes = 4;
  static __m512 load(const void* p, int64_t k) {
    return _mm512_loadu_ps(static_cast<const float*>(p) + k);
  }
  static __m512 load_tail(const void* p, int64_t k, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(p) + k);
  }
};
struct LoadF16 {
  static constexpr int kElemBytes = 2;
  static __m512 load(const void* p, int64_t k) {
    return _mm512_cvtph_ps(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(p) + k)));
  }
  static __m512 load_tail(const void* p, int64_t k, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(p) + k));
  }
};
struct LoadBF16 {
  static constexpr int kElemBytes = 2;
  static __m512 widen(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m512 load(const void* p, int64_t k) {
    return widen(
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(p) + k)));
  }
  static __m512 load_tail(const void* p, int64_t k, __mmask16 m) {
    return widen(_mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(p) + k));
  }
};

// The horizontal sums of 16 accumulators at once, bit for bit
// _mm512_reduce_add_ps's on each (the header's fixed tree: lane i + lane
// i + 8, then j + j + 4, then k + k + 2, then 0 + 1; float addition is
// commutative, so only the pairing matters): lane m of the result is the sum
// of v[m]. Each level adds two vectors' worth of halves at once, 15 adds and
// 30 shuffles for all 16 instead of 16 x 7 dependent steps, which with a
// few hundred columns (a small model's rows) cost as much as the FMAs.
inline __m512 reduce16(const __m512* v) {
  // The tree leaves lane 4m + e holding input m + 4e: feed the inputs in the
  // transposed order so that lane m holds input m.
  __m512 s[8];
#pragma GCC unroll 8
  for (int p = 0; p < 8; ++p) {
    const int a = 2 * p, b = 2 * p + 1;
    const __m512 va = v[4 * (a % 4) + a / 4], vb = v[4 * (b % 4) + b / 4];
    // [va.lo256, vb.lo256] + [va.hi256, vb.hi256]: i + i + 8 for both.
    s[p] = _mm512_add_ps(_mm512_shuffle_f32x4(va, vb, 0x44), _mm512_shuffle_f32x4(va, vb, 0xEE));
  }
  __m512 u[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) {
    // 128-bit blocks 0, 2 + 1, 3 of each: j + j + 4.
    u[q] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * q], s[2 * q + 1], 0x88),
                         _mm512_shuffle_f32x4(s[2 * q], s[2 * q + 1], 0xDD));
  }
  __m512 w[2];
#pragma GCC unroll 2
  for (int z = 0; z < 2; ++z) {
    // Lanes 0, 1 + 2, 3 of each block: k + k + 2.
    w[z] = _mm512_add_ps(_mm512_shuffle_ps(u[2 * z], u[2 * z + 1], 0x44),
                         _mm512_shuffle_ps(u[2 * z], u[2 * z + 1], 0xEE));
  }
  // Lanes 0 + 1.
  return _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
}

// out[t * out_stride + r] for R rows x T tokens. `next` (may be null) is
// the start of the next row tile's bytes: it is prefetched R times as fast
// as these rows are read, so it is in cache when its turn comes (DRAM-bound
// decode).
template <class Load, int R, int T>
__attribute__((flatten)) void tile(const void* const* w, const float* const* x, int64_t cols,
                                   float* out, int64_t out_stride, const char* next) {
  __m512 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  const int64_t full = cols / 16 * 16;
  constexpr int kStepBytes = R * 16 * Load::kElemBytes;
  for (int64_t k = 0; k < full; k += 16) {
    if (next != nullptr) {
#pragma GCC unroll 8
      for (int o = 0; o < kStepBytes; o += 64) {
        _mm_prefetch(next + k * R * Load::kElemBytes + o, _MM_HINT_T1);
      }
    }
    __m512 wv[R];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) wv[r] = Load::load(w[r], k);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_loadu_ps(x[t] + k);
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r) acc[r][t] = _mm512_fmadd_ps(wv[r], xv, acc[r][t]);
    }
  }
  if (full < cols) {
    const auto m = static_cast<__mmask16>((1u << (cols - full)) - 1u);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m512 wv = Load::load_tail(w[r], full, m);
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) {
        acc[r][t] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x[t] + full), acc[r][t]);
      }
    }
  }
  if constexpr (R == 4) {
    // Four tokens' four rows per reduce16: lanes 4t..4t + 3 are token t's
    // rows, stored as one 128-bit vector.
#pragma GCC unroll 2
    for (int t0 = 0; t0 < T; t0 += 4) {
      __m512 v[16];
#pragma GCC unroll 4
      for (int i = 0; i < 4; ++i)
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
          v[4 * i + r] = t0 + i < T ? acc[r][t0 + i] : _mm512_setzero_ps();
      const __m512 sums = reduce16(v);
      const int toks = T - t0 < 4 ? T - t0 : 4;
      for (int i = 0; i < toks; ++i) {
        const __m128 rows4 = i == 0   ? _mm512_castps512_ps128(sums)
                             : i == 1 ? _mm512_extractf32x4_ps(sums, 1)
                             : i == 2 ? _mm512_extractf32x4_ps(sums, 2)
                                      : _mm512_extractf32x4_ps(sums, 3);
        _mm_storeu_ps(out + (t0 + i) * out_stride, rows4);
      }
    }
  } else {
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) out[t * out_stride + r] = _mm512_reduce_add_ps(acc[r][t]);
  }
}

template <class Load, int R>
void tile_tokens(int toks, const void* const* w, const float* const* x, int64_t cols, float* out,
                 int64_t out_stride, const char* next = nullptr) {
  switch (toks) {
    case 1:
      tile<Load, R, 1>(w, x, cols, out, out_stride, next);
      break;
    case 2:
      tile<Load, R, 2>(w, x, cols, out, out_stride, next);
      break;
    case 3:
      tile<Load, R, 3>(w, x, cols, out, out_stride, next);
      break;
    case 4:
      tile<Load, R, 4>(w, x, cols, out, out_stride, next);
      break;
    case 5:
      tile<Load, R, 5>(w, x, cols, out, out_stride, next);
      break;
    default:
      tile<Load, R, 6>(w, x, cols, out, out_stride, next);
      break;
  }
}

// `floats` of `buffer`, 64-byte aligned, grown as needed (a thread-local
// buffer: no allocation after warm-up).
float* aligned_floats(std::vector<float>& buffer, size_t floats) {
  if (buffer.size() < floats + 16) buffer.resize(floats + 16);
  const auto addr = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + ((64 - addr % 64) % 64) / sizeof(float);
}

// A thread-local fp32 copy of a row tile.
float* widened_scratch(size_t floats) {
  thread_local std::vector<float> buffer;
  return aligned_floats(buffer, floats);
}

// Thread-local room for `vectors` saved accumulators.
__m512* partial_scratch(size_t vectors) {
  thread_local std::vector<float> buffer;
  return reinterpret_cast<__m512*>(aligned_floats(buffer, vectors * 16));
}

// Columns [k0, k1) of R fp32 weight rows x T tokens, one block of the
// many-token path. The accumulators start at zero on the first block and
// from `partial` after it; after the last block (which also takes the
// zero-padded partial vector up to `cols`) the sums go to out[t * out_stride
// + r], otherwise the accumulators go back to `partial`.
template <int R, int T>
__attribute__((flatten)) void block_tile(const float* const* w, const float* const* x, int64_t k0,
                                         int64_t k1, int64_t cols, bool first, bool last,
                                         __m512* partial, float* out, int64_t out_stride) {
  __m512 acc[R][T];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) acc[r][t] = first ? _mm512_setzero_ps() : partial[r * T + t];
  for (int64_t k = k0; k < k1; k += 16) {
    __m512 xv[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) xv[t] = _mm512_loadu_ps(x[t] + k);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      __m512 wv = _mm512_load_ps(w[r] + k);
      // One load into a register, not one memory operand per token's FMA
      // (which GCC otherwise emits: 27 loads for 24 FMAs).
      asm("" : "+v"(wv));
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  if (!last) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) partial[r * T + t] = acc[r][t];
    return;
  }
  if (k1 < cols) {  // the widened rows are zero-padded to whole vectors
    const auto m = static_cast<__mmask16>((1u << (cols - k1)) - 1u);
    __m512 xv[T];
#pragma GCC unroll 4
    for (int t = 0; t < T; ++t) xv[t] = _mm512_maskz_loadu_ps(m, x[t] + k1);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 wv = _mm512_load_ps(w[r] + k1);
#pragma GCC unroll 4
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  // Sixteen outputs per reduce16, token-major: lane i of group g is token
  // (16g + i) / R, row (16g + i) % R.
  constexpr int kOut = R * T;
  alignas(64) float sums[(kOut + 15) / 16 * 16];
#pragma GCC unroll 2
  for (int g = 0; g < kOut; g += 16) {
    __m512 v[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      v[i] = g + i < kOut ? acc[(g + i) % R][(g + i) / R] : _mm512_setzero_ps();
    }
    _mm512_store_ps(sums + g, reduce16(v));
  }
#pragma GCC unroll 4
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) out[t * out_stride + r] = sums[t * R + r];
}

template <int R>
void block_tile_tokens(int toks, const float* const* w, const float* const* x, int64_t k0,
                       int64_t k1, int64_t cols, bool first, bool last, __m512* partial, float* out,
                       int64_t out_stride) {
  switch (toks) {
    case 1:
      return block_tile<R, 1>(w, x, k0, k1, cols, first, last, partial, out, out_stride);
    case 2:
      return block_tile<R, 2>(w, x, k0, k1, cols, first, last, partial, out, out_stride);
    default:
      return block_tile<R, 3>(w, x, k0, k1, cols, first, last, partial, out, out_stride);
  }
}

// The many-token path (see the top of the file): rows [r0, r1) x all n
// tokens.
template <class Load>
void matmul_blocked(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                    float* y, int64_t r0, int64_t r1) {
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const int64_t chunk =
      std::max<int64_t>(kBlockTokens, static_cast<int64_t>(kBlockChunkBytes / x_row_bytes) /
                                          kBlockTokens * kBlockTokens);
  const int64_t padded = (w.cols + 15) / 16 * 16;
  const int64_t full = w.cols / 16 * 16;
  float* wide = widened_scratch(static_cast<size_t>(kBlockRows * padded));
  constexpr int kTileVectors = kBlockRows * kBlockTokens;
  __m512* partial = partial_scratch(static_cast<size_t>(chunk / kBlockTokens * kTileVectors));
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t t1 = std::min(n, t0 + chunk);
    for (int64_t r = r0; r < r1; r += kBlockRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kBlockRows, r1 - r));
      const float* wr[kBlockRows];
      for (int i = 0; i < rows; ++i) {
        const void* src = wd + static_cast<size_t>(r + i) * w.row_bytes;
        float* dst = wide + i * padded;
        int64_t k = 0;
        for (; k + 16 <= w.cols; k += 16) _mm512_store_ps(dst + k, Load::load(src, k));
        if (k < w.cols) {
          const auto m = static_cast<__mmask16>((1u << (w.cols - k)) - 1u);
          _mm512_store_ps(dst + k, Load::load_tail(src, k, m));
        }
        wr[i] = dst;
      }
      for (int64_t k0 = 0; k0 < w.cols; k0 += kBlockCols) {
        const bool first = k0 == 0;
        const bool last = k0 + kBlockCols >= w.cols;
        const int64_t k1 = last ? full : k0 + kBlockCols;
        __m512* slot = partial;
        for (int64_t t = t0; t < t1; t += kBlockTokens, slot += kTileVectors) {
          const int toks = static_cast<int>(std::min<int64_t>(kBlockTokens, t1 - t));
          const float* xr[kBlockTokens];
          for (int i = 0; i < toks; ++i) {
            xr[i] =
                reinterpret_cast<const float*>(x_enc + static_cast<size_t>(t + i) * x_row_bytes);
          }
          float* out = y + t * w.rows + r;
          // Rows of the tile: 8 at once, else 4 at once, then one by one,
          // each group with its own share of the token tile's slot.
          int i = 0;
          if (rows == kBlockRows) {
            block_tile_tokens<kBlockRows>(toks, wr, xr, k0, k1, w.cols, first, last, slot, out,
                                          w.rows);
            i = rows;
          }
          for (; i + 4 <= rows; i += 4) {
            block_tile_tokens<4>(toks, wr + i, xr, k0, k1, w.cols, first, last,
                                 slot + i * kBlockTokens, out + i, w.rows);
          }
          for (; i < rows; ++i) {
            block_tile_tokens<1>(toks, wr + i, xr, k0, k1, w.cols, first, last,
                                 slot + i * kBlockTokens, out + i, w.rows);
          }
        }
      }
    }
  }
}

// The few-token path (see the top of the file): rows [r0, r1) x all n
// tokens, the weights read in place, in token chunks whose activations stay
// in L2.
template <class Load>
void matmul_chunks(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                   float* y, int64_t r0, int64_t r1) {
  const auto* wd = static_cast<const uint8_t*>(w.data);
  const int64_t chunk = std::max<int64_t>(
      kTokens, static_cast<int64_t>(kChunkBytes / x_row_bytes) / kTokens * kTokens);
  for (int64_t t0 = 0; t0 < n; t0 += chunk) {
    const int64_t t1 = std::min(n, t0 + chunk);
    for (int64_t r = r0; r < r1; r += kRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kRows, r1 - r));
      const void* wr[kRows];
      for (int i = 0; i < rows; ++i) wr[i] = wd + static_cast<size_t>(r + i) * w.row_bytes;
      for (int64_t t = t0; t < t1; t += kTokens) {
        const int toks = static_cast<int>(std::min<int64_t>(kTokens, t1 - t));
        const float* xr[kTokens];
        for (int i = 0; i < toks; ++i) {
          xr[i] = reinterpret_cast<const float*>(x_enc + static_cast<size_t>(t + i) * x_row_bytes);
        }
        float* out = y + t * w.rows + r;
        // Prefetch the next tile on the first token tile only (weights are
        // then in cache for the rest of the chunk).
        const char* next =
            t == t0 && r + 2 * kRows <= r1
                ? reinterpret_cast<const char*>(wd) + static_cast<size_t>(r + kRows) * w.row_bytes
                : nullptr;
        if (rows == kRows) {
          tile_tokens<Load, kRows>(toks, wr, xr, w.cols, out, w.rows, next);
        } else {
          for (int i = 0; i < rows; ++i) {
            tile_tokens<Load, 1>(toks, wr + i, xr, w.cols, out + i, w.rows);
          }
        }
      }
    }
  }
}

template <class Load>
void matmul_typed(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                  float* y, int64_t r0, int64_t r1) {
  const bool many =
      Load::kElemBytes == 4 ? n > kFewTokenMaxF32 : w.cols < kWideCols && n > kFewTokenMaxNarrow;
  if (many) return matmul_blocked<Load>(w, x_enc, x_row_bytes, n, y, r0, r1);
  matmul_chunks<Load>(w, x_enc, x_row_bytes, n, y, r0, r1);
}

}  // namespace

bool matmul_supports(DType weight_type) {
  return weight_type == DType::kF32 || weight_type == DType::kF16 || weight_type == DType::kBF16;
}

size_t activation_row_bytes(DType weight_type, int64_t cols) {
  (void)weight_type;
  return static_cast<size_t>(cols) * sizeof(float);
}

void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst) {
  avx2::encode_activation_row(weight_type, x, cols, dst);
}

void matmul_rows(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n, float* y,
                 int64_t row_begin, int64_t row_end) {
  if (row_begin >= row_end) return;
  switch (w.type) {
    case DType::kF32:
      matmul_typed<LoadF32>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    case DType::kF16:
      matmul_typed<LoadF16>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    case DType::kBF16:
      matmul_typed<LoadBF16>(w, x_enc, x_row_bytes, n, y, row_begin, row_end);
      return;
    default:
      return;
  }
}

}  // namespace strata::avx512_float
