// The AVX-512 VNNI Q4_K / Q6_K matmul (kernels/matmul_kquant_avx512.h),
// called directly: its activation encoding is vec_dot's Q8_K byte for byte;
// every output is bit-identical to vec_dot::dot_ref (the header's rounding
// order) on row-tile and token-tile tails and with extreme quants, on both
// the row-wise (n <= 3) and the tiled paths; and an output does not depend
// on n, the token's place in a tile, or how rows are split between threads.
#include "kernels/matmul_kquant_avx512.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/amx_support.h"
#include "kernels/dispatch.h"
#include "kernels/packed_weight.h"
#include "kernels/quant.h"
#include "kernels/vec_dot.h"
#include "test_support.h"
#include "util/thread_pool.h"

namespace strata {
namespace {

namespace kq = avx512_kquant;
using testing::has_vnni;
using testing::KQuantWeight;
using testing::make_kquant_weight;
using testing::make_kquant_x;
using testing::random_floats;

std::vector<uint8_t> encode(DType t, const std::vector<float>& x, int64_t n, int64_t cols) {
  const size_t row_bytes = kq::activation_row_bytes(t, cols);
  std::vector<uint8_t> enc(row_bytes * n);
  for (int64_t i = 0; i < n; ++i) {
    kq::encode_activation_row(t, x.data() + i * cols, cols, enc.data() + i * row_bytes);
  }
  return enc;
}

// The kernel over n tokens, rows split as matmul splits them over nth threads
// (run one after another on this thread).
std::vector<float> run(const WeightView& w, const uint8_t* x_enc, int64_t n, int nth) {
  const size_t x_row_bytes = kq::activation_row_bytes(w.type, w.cols);
  std::vector<float> y(n * w.rows, NAN);
  for (int ith = 0; ith < nth; ++ith) {
    int64_t begin, end;
    split_range_in_tiles(w.rows, kq::kRowShare, ith, nth, &begin, &end);
    kq::matmul_rows(w, x_enc, x_row_bytes, n, y.data(), begin, end);
  }
  return y;
}

std::vector<float> reference(const WeightView& w, const uint8_t* x_enc, int64_t n) {
  const size_t x_row_bytes = vec_dot::activation_row_bytes(w.type, w.cols);
  std::vector<float> y(n * w.rows);
  const auto* wd = static_cast<const uint8_t*>(w.data);
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t r = 0; r < w.rows; ++r) {
      y[t * w.rows + r] =
          vec_dot::dot_ref(w.type, wd + r * w.row_bytes, x_enc + t * x_row_bytes, w.cols);
    }
  }
  return y;
}

bool same_bits(float a, float b) {
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub;
}

TEST(MatmulKQuantAvx512, EncodingIsVecDotQ8K) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  const int64_t cols = 3 * kQK_K;
  auto x = random_floats(cols, 3);
  x[5] = 0.0f;
  for (DType t : {DType::kQ4_K, DType::kQ6_K}) {
    EXPECT_TRUE(kq::matmul_supports(t));
    const size_t bytes = vec_dot::activation_row_bytes(t, cols);
    ASSERT_EQ(kq::activation_row_bytes(t, cols), bytes);
    std::vector<uint8_t> want(bytes), got(bytes);
    vec_dot::encode_activation_row(t, x.data(), cols, want.data());
    kq::encode_activation_row(t, x.data(), cols, got.data());
    EXPECT_EQ(got, want) << dtype_name(t);
  }
  EXPECT_FALSE(kq::matmul_supports(DType::kQ4_0));
  EXPECT_FALSE(kq::matmul_supports(DType::kF32));
}

TEST(MatmulKQuantAvx512, BitIdenticalToReferenceOnOddShapes) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  for (DType t : {DType::kQ4_K, DType::kQ6_K}) {
    for (int64_t cols : {kQK_K, 5 * kQK_K, 2048}) {
      for (int64_t rows : {1, 15, 16, 17, 45}) {
        const KQuantWeight w =
            make_kquant_weight(t, rows, cols, static_cast<uint32_t>(rows * 7 + cols));
        for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 25, 32, 33}) {
          const auto x = make_kquant_x(n, cols, static_cast<uint32_t>(n * 13 + cols));
          const auto enc = encode(t, x, n, cols);
          const auto want = reference(w.view, enc.data(), n);
          const auto got = run(w.view, enc.data(), n, 1);
          for (int64_t i = 0; i < n * rows; ++i) {
            ASSERT_TRUE(same_bits(got[i], want[i]))
                << dtype_name(t) << " rows=" << rows << " cols=" << cols << " n=" << n
                << " t=" << i / rows << " r=" << i % rows << " got " << got[i] << " want "
                << want[i];
          }
        }
      }
    }
  }
}

// TinyLlama's FFN-down width: more super-blocks than one packed block, and
// more tokens than one activation chunk.
TEST(MatmulKQuantAvx512, BitIdenticalToReferenceAcrossChunks) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  for (DType t : {DType::kQ4_K, DType::kQ6_K}) {
    const int64_t rows = 19, cols = 5632, n = 131;
    const KQuantWeight w = make_kquant_weight(t, rows, cols, 77);
    const auto x = make_kquant_x(n, cols, 78);
    const auto enc = encode(t, x, n, cols);
    const auto want = reference(w.view, enc.data(), n);
    const auto got = run(w.view, enc.data(), n, 2);
    for (int64_t i = 0; i < n * rows; ++i) {
      ASSERT_TRUE(same_bits(got[i], want[i]))
          << dtype_name(t) << " t=" << i / rows << " r=" << i % rows;
    }
  }
}

TEST(MatmulKQuantAvx512, EveryOutputIsIndependentOfNAndTileAndSplit) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  for (DType t : {DType::kQ4_K, DType::kQ6_K}) {
    const int64_t rows = 45, cols = 1024, n = 37;
    const KQuantWeight w = make_kquant_weight(t, rows, cols, 5);
    const auto x = make_kquant_x(n, cols, 6);
    const auto enc = encode(t, x, n, cols);
    const size_t x_row_bytes = kq::activation_row_bytes(t, cols);
    const auto all = run(w.view, enc.data(), n, 1);
    // Each token alone (n = 1), and every suffix of the batch (the token
    // lands at another place in its tile).
    for (int64_t i = 0; i < n; ++i) {
      const auto one = run(w.view, enc.data() + i * x_row_bytes, 1, 1);
      for (int64_t r = 0; r < rows; ++r) {
        ASSERT_TRUE(same_bits(one[r], all[i * rows + r])) << dtype_name(t) << " t=" << i;
      }
    }
    for (int64_t skip : {1, 3, 5}) {
      const auto part = run(w.view, enc.data() + skip * x_row_bytes, n - skip, 1);
      for (int64_t i = 0; i < (n - skip) * rows; ++i) {
        ASSERT_TRUE(same_bits(part[i], all[skip * rows + i])) << dtype_name(t) << " skip=" << skip;
      }
    }
    // Thread splits, including ranges that cut a 16-row tile.
    for (int nth : {2, 3, 4}) {
      const auto split = run(w.view, enc.data(), n, nth);
      for (int64_t i = 0; i < n * rows; ++i) ASSERT_TRUE(same_bits(split[i], all[i]));
    }
    std::vector<float> cut(n * rows, NAN);
    for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 7}, {7, 30}, {30, 31}, {31, rows}}) {
      kq::matmul_rows(w.view, enc.data(), x_row_bytes, n, cut.data(), begin, end);
    }
    for (int64_t i = 0; i < n * rows; ++i) ASSERT_TRUE(same_bits(cut[i], all[i]));
    // The same on a thread pool (each worker's own scratch).
    ThreadPool pool(2);
    std::vector<float> pooled(n * rows, NAN);
    pool.run([&](int ith, int nth) {
      int64_t begin, end;
      split_range_in_tiles(rows, kq::kRowShare, ith, nth, &begin, &end);
      kq::matmul_rows(w.view, enc.data(), x_row_bytes, n, pooled.data(), begin, end);
    });
    for (int64_t i = 0; i < n * rows; ++i) ASSERT_TRUE(same_bits(pooled[i], all[i]));
  }
}

// A Q4_K weight in the kTiled16 layout, packed by the kernel's own
// pack_tiles (whatever this CPU's AMX, so the test runs everywhere VNNI
// does), in a 64-byte aligned buffer.
struct TiledWeight {
  std::vector<uint8_t> storage;
  WeightView view;
};

TiledWeight make_tiled(const WeightView& w) {
  TiledWeight t;
  const size_t bytes = kq::tiled_bytes(w.type, w.rows, w.cols);
  t.storage.resize(bytes + 64);
  auto* data = t.storage.data() + (64 - reinterpret_cast<uintptr_t>(t.storage.data()) % 64) % 64;
  const int64_t tiles = (w.rows + 15) / 16;
  // Two calls, as the loader's threads split the tiles.
  kq::pack_tiles(w, 0, tiles / 2, data);
  kq::pack_tiles(w, tiles / 2, tiles, data);
  t.view = w;
  t.view.data = data;
  t.view.layout = WeightLayout::kTiled16;
  return t;
}

// kTiled16 Q4_K and Q6_K give the reference's bits (and so the GGUF
// layout's) for every n (the register path up to 32 tokens of Q4_K and 16
// of Q6_K, the scratch path beyond; both sides of each limit), on row-tile
// tails, with extreme quants, more super-blocks than one packed block, more
// tokens than a chunk, and every thread split.
class TiledKQuant : public ::testing::TestWithParam<DType> {};

TEST_P(TiledKQuant, BitIdenticalToReference) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  const DType t = GetParam();
  EXPECT_TRUE(kq::tiled_supports(t));
  for (int64_t cols : {kQK_K, 5 * kQK_K, 2048}) {
    for (int64_t rows : {1, 15, 16, 17, 45}) {
      const KQuantWeight w =
          make_kquant_weight(t, rows, cols, static_cast<uint32_t>(rows * 11 + cols));
      const TiledWeight tw = make_tiled(w.view);
      // The GGUF bytes of whole tiles (Q6_K: plus 32 per super-block of a tile).
      const size_t pad = t == DType::kQ6_K ? 32 * static_cast<size_t>(cols / kQK_K) : 0;
      EXPECT_EQ(kq::tiled_bytes(t, rows, cols),
                static_cast<size_t>((rows + 15) / 16) * (16 * w.view.row_bytes + pad));
      for (int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17, 25, 32, 33}) {
        const auto x = make_kquant_x(n, cols, static_cast<uint32_t>(n * 17 + cols));
        const auto enc = encode(t, x, n, cols);
        const auto want = reference(w.view, enc.data(), n);
        for (int nth : {1, 2, 3}) {
          const auto got = run(tw.view, enc.data(), n, nth);
          for (int64_t i = 0; i < n * rows; ++i) {
            ASSERT_TRUE(same_bits(got[i], want[i]))
                << "rows=" << rows << " cols=" << cols << " n=" << n << " nth=" << nth
                << " t=" << i / rows << " r=" << i % rows << " got " << got[i] << " want "
                << want[i];
          }
        }
      }
    }
  }
  const int64_t rows = 19, cols = 5632, n = 131;
  const KQuantWeight w = make_kquant_weight(t, rows, cols, 79);
  const TiledWeight tw = make_tiled(w.view);
  const auto x = make_kquant_x(n, cols, 80);
  const auto enc = encode(t, x, n, cols);
  const auto want = reference(w.view, enc.data(), n);
  const auto got = run(tw.view, enc.data(), n, 2);
  for (int64_t i = 0; i < n * rows; ++i) {
    ASSERT_TRUE(same_bits(got[i], want[i])) << "t=" << i / rows << " r=" << i % rows;
  }
}

// What a model loads: PackedWeight tiles Q4_K and Q6_K on a VNNI CPU
// without a usable AMX unit (whose kernel reads the GGUF layout), and
// matmul() on it gives the GGUF weight's bits for every n, also with the
// ISA capped.
TEST_P(TiledKQuant, LoaderPacksWhereAmxIsNotUsable) {
  if (!has_vnni()) GTEST_SKIP() << "no AVX-512 VNNI";
  testing::ScopedIsa scoped(KernelIsa::kAvx512Vnni);
  const DType t = GetParam();
  const KQuantWeight w = make_kquant_weight(t, 37, 3 * kQK_K, 91);
  const std::unique_ptr<PackedWeight> packed = PackedWeight::pack(w.view);
  if (amx_support().usable()) {
    EXPECT_EQ(packed, nullptr);
    GTEST_SKIP() << "AMX is usable here: Q4_K stays in the GGUF layout";
  }
  ASSERT_NE(packed, nullptr);
  EXPECT_EQ(packed->view().layout, WeightLayout::kTiled16);
  EXPECT_EQ(packed->size_bytes(), kq::tiled_bytes(t, 37, 3 * kQK_K));
  ThreadPool pool(2);
  for (int64_t n : {1, 3, 4, 5, 8, 9, 17, 24}) {
    const auto x = random_floats(n * w.view.cols, static_cast<uint32_t>(n + 5));
    std::vector<float> want(n * 37), got(n * 37, NAN);
    matmul(w.view, x.data(), n, want.data(), pool);
    matmul(packed->view(), x.data(), n, got.data(), pool);
    ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << n;
  }
  const auto x = random_floats(5 * w.view.cols, 6);
  std::vector<float> a(5 * 37), b(5 * 37, NAN);
  matmul(w.view, x.data(), 5, a.data(), pool);
  testing::ScopedIsa avx2(KernelIsa::kAvx2);
  matmul(packed->view(), x.data(), 5, b.data(), pool);
  ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}

INSTANTIATE_TEST_SUITE_P(MatmulKQuantAvx512, TiledKQuant,
                         ::testing::Values(DType::kQ4_K, DType::kQ6_K),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(dtype_name(info.param));
                         });

TEST(MatmulKQuantAvx512, SplitRowsAlignsToTiles) {
  for (int64_t rows : {1, 16, 45, 2048}) {
    for (int nth : {1, 2, 3}) {
      int64_t prev_end = 0;
      for (int ith = 0; ith < nth; ++ith) {
        int64_t begin, end;
        split_range_in_tiles(rows, kq::kRowShare, ith, nth, &begin, &end);
        EXPECT_EQ(begin, prev_end);
        EXPECT_TRUE(begin % 16 == 0 || begin == rows);
        prev_end = end;
      }
      EXPECT_EQ(prev_end, rows);
    }
  }
}

}  // namespace
}  // namespace strata
