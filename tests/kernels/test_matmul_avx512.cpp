// The AVX-512 VNNI Q4_0 GEMM: bit-identical to matmul_reference (exact block
// integer dots, one fused multiply-add per block in block order) on tile and
// token tails, with extreme quants; its activation encoding is the Q8_0 one
// with each quant offset by 128.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "kernels/matmul.h"
#include "kernels/matmul_avx512.h"
#include "kernels/quant.h"
#include "kernels/vec_dot.h"
#include "test_support.h"

namespace strata {
namespace {

using testing::random_floats;
using testing::ScopedIsa;

bool has_vnni() {
  return detected_kernel_isa() == KernelIsa::kAvx512Vnni;
}

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
          for (int64_t n : {16, 23, 40}) {
            auto x = random_floats(n * cols, static_cast<uint32_t>(n * 7 + cols));
            x[0] = 5.0f;      // a block whose absmax quantizes to +127 ...
            x[cols] = -5.0f;  // ... and one to -127
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

// Q8_0 rounds like the AVX2 kernel (per-group fp32 lanes, the same final
// sum), so the two must agree bit for bit; both are near the reference.
TEST(MatmulAvx512, Q8_0IsBitIdenticalToAvx2OnTails) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
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
        const WeightView w{DType::kQ8_0, rows, cols, bytes.data(),
                           dtype_row_bytes(DType::kQ8_0, cols)};
        for (int64_t n : {16, 19, 40}) {
          auto x = random_floats(n * cols, static_cast<uint32_t>(n * 11 + cols));
          x[0] = -5.0f;
          x[cols] = 5.0f;
          std::vector<float> want(n * rows, NAN), got(n * rows, NAN), ref(n * rows);
          {
            ScopedIsa scoped(KernelIsa::kAvx2);
            matmul(w, x.data(), n, want.data(), pool);
          }
          {
            ScopedIsa scoped(KernelIsa::kAvx512Vnni);
            ASSERT_EQ(scoped.actual(), KernelIsa::kAvx512Vnni);
            matmul(w, x.data(), n, got.data(), pool);
          }
          matmul_reference(w, x.data(), n, ref.data());
          for (int64_t i = 0; i < n * rows; ++i) {
            ASSERT_EQ(got[i], want[i])
                << "threads=" << threads << " rows=" << rows << " cols=" << cols << " n=" << n
                << " t=" << i / rows << " r=" << i % rows;
            ASSERT_NEAR(got[i], ref[i], 1e-4 * (1.0 + std::fabs(ref[i])));
          }
        }
      }
    }
  }
}

TEST(MatmulAvx512, EncodingIsQ8_0OffsetBy128) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  const int64_t cols = 96;
  const auto x = random_floats(cols, 5);
  const size_t bytes = vec_dot::activation_row_bytes(DType::kQ4_0, cols);
  ASSERT_EQ(avx512::activation_row_bytes(DType::kQ4_0, cols), bytes);
  std::vector<BlockQ8_0> want(cols / kQK8_0), got(cols / kQK8_0);
  vec_dot::encode_activation_row(DType::kQ4_0, x.data(), cols, want.data());
  avx512::encode_activation_row(DType::kQ4_0, x.data(), cols, got.data());
  for (size_t b = 0; b < want.size(); ++b) {
    EXPECT_EQ(got[b].d, want[b].d);
    for (int j = 0; j < kQK8_0; ++j) {
      EXPECT_EQ(static_cast<uint8_t>(got[b].qs[j]), static_cast<uint8_t>(want[b].qs[j] + 128));
    }
  }
}

TEST(MatmulAvx512, DispatchFallsBackAndSplitsOnTileBoundaries) {
  if (!has_vnni()) {
    ScopedIsa scoped(KernelIsa::kAvx512Vnni);
    EXPECT_NE(scoped.actual(), KernelIsa::kAvx512Vnni);
    GTEST_SKIP() << "no AVX-512 VNNI";
  }
  EXPECT_FALSE(avx512::matmul_supports(DType::kQ4_0, 1));
  EXPECT_FALSE(avx512::matmul_supports(DType::kQ4_K, 512));
  EXPECT_TRUE(avx512::matmul_supports(DType::kQ4_0, 512));
  int64_t covered = 0;
  for (int ith = 0; ith < 3; ++ith) {
    int64_t begin, end;
    avx512::split_rows(45, ith, 3, &begin, &end);
    EXPECT_EQ(begin, covered);
    EXPECT_TRUE(begin % 16 == 0 || begin == 45);
    covered = end;
  }
  EXPECT_EQ(covered, 45);
}

}  // namespace
}  // namespace strata
