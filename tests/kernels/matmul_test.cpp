// matmul (every ISA, several pool sizes) against matmul_reference, and
// matmul_reference against an exact dot of the dequantized weights, with
// tolerances derived from each type's activation encoding.
#include "kernels/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "kernels/packed_weight.h"
#include "kernels/quant.h"
#include "test_support.h"

namespace strata {
namespace {

using testing::DequantWeight;
using testing::isas_to_test;
using testing::make_dequant_weight;
using testing::random_floats;
using testing::ScopedIsa;

const DType kTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,
                        DType::kQ4_0, DType::kQ4_K, DType::kQ6_K};

std::vector<int64_t> cols_for(DType t) {
  const int64_t b = dtype_traits(t).block_elems;
  if (b == 1) return {1, 7, 33, 256};
  return {b, 7 * b};
}

// Relative size of the activation encoding error per element, as a fraction
// of the block's absmax (quantized) or of the element (float formats).
double activation_rel_err(DType t) {
  switch (t) {
    case DType::kF16:
      return 1.0 / 2048;
    case DType::kBF16:
      return 1.0 / 256;
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_K:
    case DType::kQ6_K:
      return 0.5 / 127 + 1.0 / 2048;  // half a step + f16 scale rounding
    default:
      return 0.0;
  }
}

TEST(Matmul, ReferenceMatchesExactDotOfDequantizedWeights) {
  for (DType t : kTypes) {
    for (int64_t cols : cols_for(t)) {
      const int64_t rows = 3, n = 5;
      DequantWeight w = make_dequant_weight(t, rows, cols, 1);
      const auto x = random_floats(n * cols, 2);
      std::vector<float> y(n * rows);
      matmul_reference(w.view, x.data(), n, y.data());
      const bool is_block_quant = dtype_traits(t).block_elems > 1;
      const int64_t act_block = (t == DType::kQ4_K || t == DType::kQ6_K) ? 256 : 32;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t r = 0; r < rows; ++r) {
          double exact = 0, bound = 0;
          for (int64_t c = 0; c < cols; ++c) {
            const double wv = w.dequant[r * cols + c], xv = x[i * cols + c];
            exact += wv * xv;
            double x_scale = std::fabs(xv);
            if (is_block_quant) {
              x_scale = 0;
              const int64_t b0 = c / act_block * act_block;
              for (int64_t k = b0; k < b0 + act_block; ++k)
                x_scale = std::max<double>(x_scale, std::fabs(x[i * cols + k]));
            }
            bound += std::fabs(wv) * (x_scale * activation_rel_err(t) + std::fabs(xv) * 1e-6);
          }
          EXPECT_NEAR(y[i * rows + r], exact, bound + 1e-6)
              << dtype_name(t) << " cols=" << cols << " r=" << r << " i=" << i;
        }
      }
    }
  }
}

TEST(Matmul, EveryIsaMatchesReferenceOnOddShapes) {
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (DType t : kTypes) {
        for (int64_t cols : cols_for(t)) {
          for (int64_t rows : {1, 3, 17}) {
            DequantWeight w =
                make_dequant_weight(t, rows, cols, static_cast<uint32_t>(rows * 31 + cols));
            for (int64_t n : {1, 5, 33}) {
              const auto x = random_floats(n * cols, static_cast<uint32_t>(n + cols));
              std::vector<float> want(n * rows), got(n * rows, NAN);
              matmul_reference(w.view, x.data(), n, want.data());
              matmul(w.view, x.data(), n, got.data(), pool);
              for (int64_t i = 0; i < n; ++i) {
                for (int64_t r = 0; r < rows; ++r) {
                  double abs_sum = 0;
                  for (int64_t c = 0; c < cols; ++c)
                    abs_sum += std::fabs(w.dequant[r * cols + c] * x[i * cols + c]);
                  ASSERT_NEAR(got[i * rows + r], want[i * rows + r], 2e-5 * abs_sum + 1e-7)
                      << kernel_isa_name(isa) << " threads=" << threads << " " << dtype_name(t)
                      << " rows=" << rows << " cols=" << cols << " n=" << n << " r=" << r
                      << " i=" << i;
                }
              }
            }
          }
        }
      }
    }
  }
}

TEST(Matmul, RepeatedCallsGiveIdenticalResults) {
  // The scratch buffer is reused: a smaller second call must not see stale data.
  ThreadPool pool(2);
  DequantWeight w = make_dequant_weight(DType::kQ8_0, 9, 64, 3);
  const auto x = random_floats(4 * 64, 4);
  std::vector<float> a(4 * 9), b(9), c(4 * 9);
  matmul(w.view, x.data(), 4, a.data(), pool);
  matmul(w.view, x.data() + 64, 1, b.data(), pool);
  matmul(w.view, x.data(), 4, c.data(), pool);
  EXPECT_EQ(a, c);
  for (int r = 0; r < 9; ++r) EXPECT_EQ(b[r], a[9 + r]);
}

// Float weights are copied as they are, on every ISA: the GGUF layout, the
// same bytes in memory of the copy's own, the same outputs bit for bit.
TEST(PackedWeight, FloatWeightsAreCopiedAsTheyAre) {
  ThreadPool pool(3);
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    for (DType type : {DType::kF32, DType::kF16, DType::kBF16}) {
      EXPECT_TRUE(PackedWeight::is_packable(type));
      const int64_t rows = 37, cols = 117;
      const auto src = random_floats(rows * cols, 5, 0.1f);
      const auto bytes = quantize_rows(type, src.data(), rows, cols);
      const WeightView w{type, rows, cols, bytes.data(), dtype_row_bytes(type, cols)};
      for (ThreadPool* copier : {static_cast<ThreadPool*>(nullptr), &pool}) {
        const std::unique_ptr<PackedWeight> copy = PackedWeight::pack(w, copier);
        ASSERT_NE(copy, nullptr) << dtype_name(type);
        const WeightView& c = copy->view();
        EXPECT_EQ(c.layout, WeightLayout::kGguf);
        EXPECT_EQ(c.type, type);
        EXPECT_EQ(c.rows, rows);
        EXPECT_EQ(c.cols, cols);
        EXPECT_EQ(c.row_bytes, w.row_bytes);
        EXPECT_NE(c.data, w.data);
        EXPECT_EQ(copy->size_bytes(), bytes.size());
        EXPECT_EQ(std::memcmp(c.data, bytes.data(), bytes.size()), 0) << dtype_name(type);
        const auto x = random_floats(5 * cols, 6);
        std::vector<float> a(5 * rows), b(5 * rows);
        matmul(w, x.data(), 5, a.data(), pool);
        matmul(c, x.data(), 5, b.data(), pool);
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
            << kernel_isa_name(isa) << " " << dtype_name(type);
      }
    }
  }
}

// From kChunkedMinTokens (24) tokens on, threads take rows in chunks as they
// ask instead of one share each: every pool size gives the one-thread bits,
// for one matmul and for a group (chunks span its targets), and a token's
// outputs are those it gets alone.
TEST(Matmul, ChunkedRowsGiveTheOneThreadBits) {
  ThreadPool one(1), two(2), three(3);
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    for (DType t : kTypes) {
      const int64_t cols = cols_for(t).back();
      DequantWeight a = make_dequant_weight(t, 150, cols, 21);
      DequantWeight b = make_dequant_weight(t, 37, cols, 22);
      std::unique_ptr<PackedWeight> pa = PackedWeight::pack(a.view, &two);
      std::unique_ptr<PackedWeight> pb = PackedWeight::pack(b.view, &three);
      for (bool packed : {false, true}) {
        const WeightView& wa = packed && pa ? pa->view() : a.view;
        const WeightView& wb = packed && pb ? pb->view() : b.view;
        for (int64_t n : {int64_t{29}, int64_t{67}}) {
          const auto x = random_floats(n * cols, static_cast<uint32_t>(cols + n));
          std::vector<float> want_a(n * 150), want_b(n * 37);
          matmul(wa, x.data(), n, want_a.data(), one);
          matmul(wb, x.data(), n, want_b.data(), one);
          for (ThreadPool* pool : {&two, &three}) {
            const std::string where = std::string(kernel_isa_name(isa)) + " " +
                                      std::string(dtype_name(t)) + (packed ? " packed" : " gguf") +
                                      " threads=" + std::to_string(pool->num_threads()) +
                                      " n=" + std::to_string(n);
            std::vector<float> ya(n * 150, NAN), ga(n * 150, NAN), gb(n * 37, NAN);
            matmul(wa, x.data(), n, ya.data(), *pool);
            EXPECT_EQ(std::memcmp(ya.data(), want_a.data(), ya.size() * sizeof(float)), 0) << where;
            matmul_group({{&wa, ga.data()}, {&wb, gb.data()}}, x.data(), n, *pool);
            EXPECT_EQ(std::memcmp(ga.data(), want_a.data(), ga.size() * sizeof(float)), 0) << where;
            EXPECT_EQ(std::memcmp(gb.data(), want_b.data(), gb.size() * sizeof(float)), 0) << where;
          }
          for (int64_t tok : {int64_t{0}, n - 1}) {
            std::vector<float> alone(150);
            matmul(wa, x.data() + tok * cols, 1, alone.data(), two);
            EXPECT_EQ(std::memcmp(alone.data(), want_a.data() + tok * 150, 150 * sizeof(float)), 0)
                << kernel_isa_name(isa) << " " << dtype_name(t) << " n=" << n << " token " << tok;
          }
        }
      }
    }
  }
}

// matmul_group gives each target matmul's bits: on every ISA and pool size,
// for every type (GGUF and as a model loads it, packed where this CPU
// repacks), with rows that do not fill a tile, and for a group it must split
// (two types).
TEST(Matmul, GroupGivesEachMatmulsBits) {
  for (KernelIsa isa : isas_to_test()) {
    ScopedIsa scoped(isa);
    for (int threads : {1, 2, 3}) {
      ThreadPool pool(threads);
      for (DType t : kTypes) {
        const int64_t cols = cols_for(t).back();
        DequantWeight a = make_dequant_weight(t, 37, cols, 5);
        DequantWeight b = make_dequant_weight(t, 16, cols, 6);
        DequantWeight c = make_dequant_weight(t, 3, cols, 7);
        std::unique_ptr<PackedWeight> pa = PackedWeight::pack(a.view);
        std::unique_ptr<PackedWeight> pb = PackedWeight::pack(b.view);
        std::unique_ptr<PackedWeight> pc = PackedWeight::pack(c.view);
        const WeightView* loaded[] = {pa ? &pa->view() : &a.view, pb ? &pb->view() : &b.view,
                                      pc ? &pc->view() : &c.view};
        for (bool packed : {false, true}) {
          const WeightView& wa = packed ? *loaded[0] : a.view;
          const WeightView& wb = packed ? *loaded[1] : b.view;
          const WeightView& wc = packed ? *loaded[2] : c.view;
          for (int64_t n : {1, 5, 17}) {
            const auto x = random_floats(n * cols, static_cast<uint32_t>(n + cols));
            std::vector<float> ya(n * 37), yb(n * 16), yc(n * 3);
            matmul(wa, x.data(), n, ya.data(), pool);
            matmul(wb, x.data(), n, yb.data(), pool);
            matmul(wc, x.data(), n, yc.data(), pool);
            std::vector<float> ga(n * 37, NAN), gb(n * 16, NAN), gc(n * 3, NAN);
            matmul_group({{&wa, ga.data()}, {&wb, gb.data()}, {&wc, gc.data()}}, x.data(), n, pool);
            EXPECT_EQ(std::memcmp(ga.data(), ya.data(), ya.size() * sizeof(float)), 0)
                << kernel_isa_name(isa) << " " << dtype_name(t) << " n=" << n;
            EXPECT_EQ(std::memcmp(gb.data(), yb.data(), yb.size() * sizeof(float)), 0)
                << kernel_isa_name(isa) << " " << dtype_name(t) << " n=" << n;
            EXPECT_EQ(std::memcmp(gc.data(), yc.data(), yc.size() * sizeof(float)), 0)
                << kernel_isa_name(isa) << " " << dtype_name(t) << " n=" << n;
          }
        }
      }
      // A group of two types (two activation encodings) runs as separate matmuls.
      DequantWeight f = make_dequant_weight(DType::kF32, 5, 64, 8);
      DequantWeight q = make_dequant_weight(DType::kQ8_0, 7, 64, 9);
      const auto x = random_floats(3 * 64, 11);
      std::vector<float> yf(15), yq(21), gf(15, NAN), gq(21, NAN);
      matmul(f.view, x.data(), 3, yf.data(), pool);
      matmul(q.view, x.data(), 3, yq.data(), pool);
      matmul_group({{&f.view, gf.data()}, {&q.view, gq.data()}}, x.data(), 3, pool);
      EXPECT_EQ(gf, yf);
      EXPECT_EQ(gq, yq);
    }
  }
}

}  // namespace
}  // namespace strata

#include "kernels/matmul_avx2.h"
#include "kernels/vec_dot.h"

namespace strata {
namespace {

TEST(MatmulEncoding, Avx2QuantizedActivationsAreByteIdentical) {
  if (!kernel_isa_has_avx2(detected_kernel_isa())) GTEST_SKIP() << "no AVX2";
  auto x = testing::random_floats(3 * 256, 21);
  // Exact ties: block amax 127 gives d = 1, so x = k + 0.5 rounds to even in
  // the activation encodings (as llama.cpp's AVX2 quantize_row_q8_0 and its
  // Q8_K) and away from zero in the Q8_0 weight quantizer (as roundf).
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -3.5f;
  x[3] = -0.5f;
  // Q8_0 block scales d = amax / 127 that the fp16 conversion must round as
  // fp32_to_fp16 does: a tie (1 + 3 * 2^-11 goes to even, 1 + 2^-9), a
  // subnormal half, zero, and past the half range (inf).
  const float block_amax[] = {127.0f * (1.0f + 3.0f / 2048), 1e-5f, 0.0f, 1e7f};
  for (int i = 0; i < 4; ++i) {
    float* block = x.data() + (i + 1) * kQK8_0;
    for (int j = 0; j < kQK8_0; ++j) block[j] = block_amax[i] * (j % 3 - 1) / 2;
    block[5] = -block_amax[i];
  }
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K}) {
    const size_t bytes = vec_dot::activation_row_bytes(t, 768);
    ASSERT_EQ(bytes, avx2::activation_row_bytes(t, 768));
    std::vector<uint8_t> want(bytes), got(bytes);
    vec_dot::encode_activation_row(t, x.data(), 768, want.data());
    avx2::encode_activation_row(t, x.data(), 768, got.data());
    EXPECT_EQ(got, want) << dtype_name(t);
  }
  std::vector<BlockQ8_0> q(24);
  quantize_row_q8_0(x.data(), q.data(), 768);
  EXPECT_EQ(q[0].qs[1], 3);
  EXPECT_EQ(q[0].qs[2], -4);
  EXPECT_EQ(q[0].qs[3], -1);
  vec_dot::encode_activation_row(DType::kQ8_0, x.data(), 768, q.data());
  EXPECT_EQ(q[0].qs[1], 2);
  EXPECT_EQ(q[0].qs[2], -4);
  EXPECT_EQ(q[0].qs[3], 0);
}

// Q8_0 activations scale by 127/amax, not by 1/(amax/127): for this amax the
// two differ in the last bit and the element below lands on either side of
// a rounding boundary.
TEST(MatmulEncoding, Q8_0ActivationsScaleBy127OverAmax) {
  int num_found = 0;
  for (int k = 1; k < 2000 && num_found < 3; ++k) {
    const float amax = 0.37f + 1e-4f * float(k);
    const float id_llama = 127.0f / amax, id_ref = 1.0f / (amax / 127.0f);
    if (id_llama == id_ref) continue;
    // x = (n + 0.5) / id_llama nudged to the boundary between the two.
    for (int n = 1; n < 126; ++n) {
      const float x = (float(n) + 0.5f) / id_llama;
      if (std::nearbyint(x * id_llama) == std::nearbyint(x * id_ref)) continue;
      std::vector<float> row(32, 0.0f);
      row[0] = amax;
      row[1] = x;
      BlockQ8_0 got[1];
      vec_dot::encode_activation_row(DType::kQ8_0, row.data(), 32, got);
      EXPECT_EQ(got[0].qs[1], static_cast<int8_t>(std::nearbyint(x * id_llama)))
          << amax << " " << x;
      if (kernel_isa_has_avx2(detected_kernel_isa())) {
        BlockQ8_0 got_avx2[1];
        avx2::encode_activation_row(DType::kQ8_0, row.data(), 32, got_avx2);
        EXPECT_EQ(got_avx2[0].qs[1], got[0].qs[1]);
      }
      ++num_found;
      break;
    }
  }
  EXPECT_GT(num_found, 0);
}

}  // namespace
}  // namespace strata
