// The AVX-512 VNNI Q4_0 / Q8_0 matmul, which serves every n on CPUs that
// have it: exact block integer dots, one fused multiply-add per block in
// block order. Q4_0 is bit-identical to matmul_reference; Q8_0 to a scalar
// model of that order. Every output is bit-identical whatever the batch size
// and the thread split (batch invariance). Tile and token tails, extreme
// quants; the activation encoding carries per-block quant-sum corrections.
#include "kernels/matmul_avx512.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "kernels/fp16.h"
#include "kernels/matmul.h"
#include "kernels/packed_weight.h"
#include "kernels/quant.h"
#include "kernels/vec_dot.h"
#include "test_support.h"

namespace strata {
namespace {

using testing::has_vnni;
using testing::q8_0_dot_fma_order;
using testing::random_floats;
using testing::ScopedIsa;

TEST(MatmulAvx512, Q4_0IsBitIdenticalToReferenceOnTails) {
  for (KernelIsa isa : testing::isas_to_test()) {
    ScopedIsa scoped(isa);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (int64_t cols : {32, 7 * 32, 2048}) {
        for (int64_t rows : {1, 15, 16, 17, 45}) {
          const auto src = random_floats(rows * cols, static_cast<uint32_t>(rows + cols), 0.1f);
          auto bytes = quantize_rows(DType::kQ4_0, src.data(), rows, cols);
          // Row 0, block 0: every nibble 0 (q = -8, the extreme of vpdpbusd's
          // signed operand) and every nibble 15 in block 0 of the last row.
          auto* first = reinterpret_cast<BlockQ4_0*>(bytes.data());
          std::memset(first->qs, 0x00, sizeof(first->qs));
          const size_t row_bytes = dtype_row_bytes(DType::kQ4_0, cols);
          auto* last = reinterpret_cast<BlockQ4_0*>(bytes.data() + (rows - 1) * row_bytes);
          if (rows > 1) std::memset(last->qs, 0xFF, sizeof(last->qs));
          const WeightView w{DType::kQ4_0, rows, cols, bytes.data(), row_bytes};
          for (int64_t n : {1, 2, 3, 5, 8, 9, 16, 23, 40}) {
            auto x = random_floats(n * cols, static_cast<uint32_t>(n * 7 + cols));
            x[0] = 5.0f;                 // a block whose absmax quantizes to +127 ...
            if (n > 1) x[cols] = -5.0f;  // ... and one to -127
            std::vector<float> want(n * rows), got(n * rows, NAN);
            matmul_reference(w, x.data(), n, want.data());
            matmul(w, x.data(), n, got.data(), pool);
            for (int64_t i = 0; i < n * rows; ++i) {
              ASSERT_EQ(got[i], want[i])
                  << kernel_isa_name(isa) << " threads=" << threads << " rows=" << rows
                  << " cols=" << cols << " n=" << n << " t=" << i / rows << " r=" << i % rows;
            }
          }
        }
      }
    }
  }
}

TEST(MatmulAvx512, Q8_0IsBitIdenticalToItsScalarOrderOnTails) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  ScopedIsa scoped(KernelIsa::kAvx512Vnni);
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (int64_t cols : {32, 7 * 32, 2048}) {
      for (int64_t rows : {1, 15, 16, 17, 45}) {
        const auto src = random_floats(rows * cols, static_cast<uint32_t>(rows * 3 + cols), 0.1f);
        auto bytes = quantize_rows(DType::kQ8_0, src.data(), rows, cols);
        // Extreme quants: -128 (not produced by the quantizer, valid in a file) and 127.
        auto* first = reinterpret_cast<BlockQ8_0*>(bytes.data());
        std::memset(first->qs, 0x80, sizeof(first->qs));
        first->qs[3] = 127;
        const size_t row_bytes = dtype_row_bytes(DType::kQ8_0, cols);
        const WeightView w{DType::kQ8_0, rows, cols, bytes.data(), row_bytes};
        for (int64_t n : {1, 2, 4, 7, 8, 16, 19, 40}) {
          auto x = random_floats(n * cols, static_cast<uint32_t>(n * 11 + cols));
          x[0] = -5.0f;
          if (n > 1) x[cols] = 5.0f;
          std::vector<float> got(n * rows, NAN), ref(n * rows);
          matmul(w, x.data(), n, got.data(), pool);
          matmul_reference(w, x.data(), n, ref.data());
          std::vector<BlockQ8_0> xq(cols / kQK8_0);
          for (int64_t t = 0; t < n; ++t) {
            vec_dot::encode_activation_row(DType::kQ8_0, x.data() + t * cols, cols, xq.data());
            for (int64_t r = 0; r < rows; ++r) {
              const auto* wr = reinterpret_cast<const BlockQ8_0*>(bytes.data() + r * row_bytes);
              const float want = q8_0_dot_fma_order(wr, xq.data(), cols / kQK8_0);
              const int64_t i = t * rows + r;
              ASSERT_EQ(got[i], want) << "threads=" << threads << " rows=" << rows
                                      << " cols=" << cols << " n=" << n << " t=" << t << " r=" << r;
              ASSERT_NEAR(got[i], ref[i], 1e-4 * (1.0 + std::fabs(ref[i])));
            }
          }
        }
      }
    }
  }
}

// Batch invariance: a token's outputs do not depend on which other tokens
// share the call, nor on the thread count.
TEST(MatmulAvx512, OutputsAreIndependentOfBatchAndThreads) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  ScopedIsa scoped(KernelIsa::kAvx512Vnni);
  const int64_t rows = 53, cols = 9 * 32, n = 37;
  for (DType type : {DType::kQ8_0, DType::kQ4_0}) {
    const auto src = random_floats(rows * cols, 77, 0.1f);
    auto bytes = quantize_rows(type, src.data(), rows, cols);
    const WeightView w{type, rows, cols, bytes.data(), dtype_row_bytes(type, cols)};
    const auto x = random_floats(n * cols, 78);
    std::vector<float> batched(n * rows);
    {
      ThreadPool pool(2);
      matmul(w, x.data(), n, batched.data(), pool);
    }
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      for (int64_t t = 0; t < n; ++t) {
        std::vector<float> alone(rows);
        matmul(w, x.data() + t * cols, 1, alone.data(), pool);
        for (int64_t r = 0; r < rows; ++r) {
          ASSERT_EQ(alone[r], batched[t * rows + r])
              << dtype_name(type) << " threads=" << threads << " t=" << t << " r=" << r;
        }
      }
      // And every sub-batch size in a row.
      for (int64_t m : {2, 5, 8, 9, 16, 17}) {
        std::vector<float> part(m * rows);
        matmul(w, x.data() + 3 * cols, m, part.data(), pool);
        for (int64_t i = 0; i < m * rows; ++i) ASSERT_EQ(part[i], batched[3 * rows + i]) << m;
      }
    }
  }
}

// The kTiled16 layout (what models load into) gives the GGUF layout's bits
// for every batch size, row tail and thread split, including extreme quants;
// rows past the end pad the last tile and are never stored. 229 and 250 rows
// of 2048 columns are 15 and 16 tiles, more than one panel (see kPanelBytes)
// of either type, with a last panel of one or of several tiles.
TEST(MatmulAvx512, TiledLayoutIsBitIdenticalToGgufLayout) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  ScopedIsa scoped(KernelIsa::kAvx512Vnni);
  for (DType type : {DType::kQ8_0, DType::kQ4_0}) {
    for (int64_t cols : {32, 3 * 32, 2048}) {
      for (int64_t rows : {1, 15, 16, 17, 53, 229, 250}) {
        const auto src = random_floats(rows * cols, static_cast<uint32_t>(rows * 3 + cols), 0.1f);
        auto bytes = quantize_rows(type, src.data(), rows, cols);
        const size_t row_bytes = dtype_row_bytes(type, cols);
        // Extreme quants in the first block of the first and last rows.
        if (type == DType::kQ8_0) {
          std::memset(reinterpret_cast<BlockQ8_0*>(bytes.data())->qs, 0x80, kQK8_0);  // -128
          std::memset(reinterpret_cast<BlockQ8_0*>(bytes.data() + (rows - 1) * row_bytes)->qs, 0x7F,
                      kQK8_0);
        } else {
          std::memset(reinterpret_cast<BlockQ4_0*>(bytes.data())->qs, 0x00, kQK8_0 / 2);
          std::memset(reinterpret_cast<BlockQ4_0*>(bytes.data() + (rows - 1) * row_bytes)->qs, 0xFF,
                      kQK8_0 / 2);
        }
        const WeightView w{type, rows, cols, bytes.data(), row_bytes};
        const std::unique_ptr<PackedWeight> packed = PackedWeight::pack(w);
        ASSERT_NE(packed, nullptr);
        const WeightView& t = packed->view();
        ASSERT_EQ(t.layout, WeightLayout::kTiled16);
        EXPECT_EQ(packed->size_bytes(), avx512::tiled_bytes(type, rows, cols));
        // The GGUF bytes of whole 16-row tiles, plus under 64 bytes of padding per tile.
        const size_t tiles = static_cast<size_t>((rows + 15) / 16);
        EXPECT_LT(packed->size_bytes(), tiles * (16 * row_bytes + 64));
        EXPECT_GE(packed->size_bytes(), tiles * 16 * row_bytes);
        for (int threads : {1, 2, 3}) {
          ThreadPool pool(threads);
          for (int64_t n : {1, 2, 7, 8, 9, 16, 24, 37}) {
            const auto x = random_floats(n * cols, static_cast<uint32_t>(n + cols + rows));
            std::vector<float> want(n * rows), got(n * rows, NAN);
            matmul(w, x.data(), n, want.data(), pool);
            matmul(t, x.data(), n, got.data(), pool);
            ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
                << dtype_name(type) << " rows=" << rows << " cols=" << cols << " n=" << n
                << " threads=" << threads;
          }
        }
        // A capped ISA still runs a packed weight (through the kernel that reads it).
        ScopedIsa avx2(KernelIsa::kAvx2);
        ThreadPool pool(2);
        const auto x = random_floats(5 * cols, 3);
        std::vector<float> a(5 * rows), b(5 * rows);
        {
          ScopedIsa back(KernelIsa::kAvx512Vnni);
          matmul(w, x.data(), 5, a.data(), pool);
        }
        matmul(t, x.data(), 5, b.data(), pool);
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
      }
    }
  }
}

// The same for the float kernels, with a partial last vector (117 columns).
TEST(MatmulAvx512, FloatOutputsAreIndependentOfBatchAndThreads) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  ScopedIsa scoped(KernelIsa::kAvx512Vnni);
  const int64_t rows = 23, cols = 117, n = 29;
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    const auto src = random_floats(rows * cols, 91, 0.5f);
    auto bytes = quantize_rows(type, src.data(), rows, cols);
    const WeightView w{type, rows, cols, bytes.data(), dtype_row_bytes(type, cols)};
    const auto x = random_floats(n * cols, 92);
    std::vector<float> batched(n * rows), ref(n * rows);
    {
      ThreadPool pool(2);
      matmul(w, x.data(), n, batched.data(), pool);
    }
    matmul_reference(w, x.data(), n, ref.data());
    for (int64_t i = 0; i < n * rows; ++i) {
      ASSERT_NEAR(batched[i], ref[i], 1e-4 * (1.0 + std::fabs(ref[i]))) << dtype_name(type);
    }
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      for (int64_t m : {1, 2, 3, 4, 5, 8, 9, 13}) {
        std::vector<float> part(m * rows);
        matmul(w, x.data() + 2 * cols, m, part.data(), pool);
        for (int64_t i = 0; i < m * rows; ++i) {
          ASSERT_EQ(part[i], batched[2 * rows + i])
              << dtype_name(type) << " threads=" << threads << " m=" << m << " i=" << i;
        }
      }
    }
  }
}

// The float kernels' documented rounding, emulated in scalar code: lane l
// of 16 sums w[k] x[k] for k = l, l + 16, ... with one fused multiply-add
// each (a partial last vector zero-padded), then the fixed tree (lane i +
// lane i + 8, j + j + 4, k + k + 2, 0 + 1). Every output of every tile shape
// gives exactly those bits: the few-token path's 4 rows x 1..6 tokens and
// tail rows, and the many-token path's 8 / 4 / 1 rows x 1..3 tokens, its
// accumulators carried across 512-column blocks (704, 1100, 2053 columns)
// and token chunks of 1 MiB of activations (130 tokens of 2053 columns).
// F16 / BF16 weights take the many-token path only for rows under 1536
// columns and more than 48 tokens (n = 50, 53 below), and the few-token
// path at every n for wider rows (2053 columns: its 512 KiB token chunks).
TEST(MatmulAvx512, FloatOutputsFollowTheDocumentedOrderBitForBit) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  ScopedIsa scoped(KernelIsa::kAvx512Vnni);
  for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int64_t cols : {7, 117, 256, 704, 1100, 2053}) {
      const int64_t rows = 37;  // per thread: 8-row tiles, then 4 and 1
      const auto src = random_floats(rows * cols, static_cast<uint32_t>(cols), 0.5f);
      auto bytes = quantize_rows(type, src.data(), rows, cols);
      const WeightView w{type, rows, cols, bytes.data(), dtype_row_bytes(type, cols)};
      std::vector<float> wf(rows * cols);
      for (int64_t r = 0; r < rows; ++r) {
        dequantize_row(type, bytes.data() + r * w.row_bytes, wf.data() + r * cols, cols);
      }
      ThreadPool pool(2);
      std::vector<int64_t> ns = {1, 2, 3, 4, 5, 6, 7, 9, 13, 16, 50, 53};
      if (cols == 2053) ns = {1, 12, 13, 130};
      for (int64_t n : ns) {
        auto x = random_floats(n * cols, static_cast<uint32_t>(n * 7 + cols));
        std::vector<float> got(n * rows, NAN);
        matmul(w, x.data(), n, got.data(), pool);
        for (float& v : x) {  // the activation encoding: rounded through the weight type
          if (type == DType::kF16) v = fp16_to_fp32(fp32_to_fp16(v));
          if (type == DType::kBF16) v = bf16_to_fp32(fp32_to_bf16(v));
        }
        for (int64_t t = 0; t < n; ++t) {
          for (int64_t r = 0; r < rows; ++r) {
            float lane[16] = {};
            for (int64_t k = 0; k < cols; ++k) {
              lane[k % 16] = std::fma(wf[r * cols + k], x[t * cols + k], lane[k % 16]);
            }
            float a[8], b[4], c[2];
            for (int i = 0; i < 8; ++i) a[i] = lane[i] + lane[i + 8];
            for (int j = 0; j < 4; ++j) b[j] = a[j] + a[j + 4];
            for (int k = 0; k < 2; ++k) c[k] = b[k] + b[k + 2];
            const float want = c[0] + c[1];
            const float have = got[t * rows + r];
            ASSERT_EQ(std::memcmp(&want, &have, sizeof(float)), 0)
                << dtype_name(type) << " cols=" << cols << " n=" << n << " t=" << t << " r=" << r
                << " got " << have << " want " << want;
          }
        }
      }
    }
  }
}

TEST(MatmulAvx512, EncodingIsQ8_0PlusQuantSumCorrectionsAndFp32Scales) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  const int64_t cols = 96, nb = cols / kQK8_0;
  const auto x = random_floats(cols, 5);
  for (DType type : {DType::kQ4_0, DType::kQ8_0}) {
    const size_t q8_bytes = vec_dot::activation_row_bytes(type, cols);
    ASSERT_EQ(avx512::activation_row_bytes(type, cols),
              q8_bytes + nb * (sizeof(int32_t) + sizeof(float)));
    std::vector<BlockQ8_0> want(nb);
    std::vector<uint8_t> got(avx512::activation_row_bytes(type, cols));
    vec_dot::encode_activation_row(type, x.data(), cols, want.data());
    avx512::encode_activation_row(type, x.data(), cols, got.data());
    ASSERT_EQ(std::memcmp(got.data(), want.data(), q8_bytes), 0);
    const int32_t offset = type == DType::kQ8_0 ? 128 : 8;
    for (int64_t b = 0; b < nb; ++b) {
      int32_t sum = 0;
      for (int j = 0; j < kQK8_0; ++j) sum += want[b].qs[j];
      int32_t corr;
      std::memcpy(&corr, got.data() + q8_bytes + b * sizeof(int32_t), sizeof(corr));
      EXPECT_EQ(corr, -offset * sum) << dtype_name(type) << " block " << b;
      // The block's fp16 scale, converted exactly.
      float d;
      std::memcpy(&d, got.data() + q8_bytes + (nb + b) * sizeof(int32_t), sizeof(d));
      EXPECT_EQ(d, fp16_to_fp32(want[b].d)) << dtype_name(type) << " block " << b;
    }
  }
}

TEST(MatmulAvx512, DispatchFallsBackAndSplitsOnTileBoundaries) {
  if (!has_vnni()) {
    ScopedIsa scoped(KernelIsa::kAvx512Vnni);
    EXPECT_NE(scoped.actual(), KernelIsa::kAvx512Vnni);
    GTEST_SKIP() << "no AVX-512 VNNI";
  }
  EXPECT_TRUE(avx512::matmul_supports(DType::kQ4_0));
  EXPECT_TRUE(avx512::matmul_supports(DType::kQ8_0));
  EXPECT_FALSE(avx512::matmul_supports(DType::kF16));
  int64_t covered = 0;
  for (int ith = 0; ith < 3; ++ith) {
    int64_t begin, end;
    split_range_in_tiles(45, avx512::kRowShare, ith, 3, &begin, &end);
    EXPECT_EQ(begin, covered);
    EXPECT_TRUE(begin % 16 == 0 || begin == 45);
    covered = end;
  }
  EXPECT_EQ(covered, 45);
}

}  // namespace
}  // namespace strata
