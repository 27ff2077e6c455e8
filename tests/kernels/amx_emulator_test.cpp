// The AMX emulator that runs the AMX kernels' tests on CPUs without AMX:
// each instruction against a direct reading of its SDM definition on odd
// tile shapes, the rows and columns past a tile's shape zeroed, dword
// wrap-around, bf16 rounding one add at a time, and #UD on bad shapes.
#include "kernels/amx_emulator.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace strata {
namespace {

namespace emu = amx_emulator;

struct Config {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(Config) == 64);

// tmm0: C (m x n dwords), tmm1: A (m rows x k dwords), tmm2: B (k rows x n
// dwords).
Config product_config(int m, int k, int n) {
  Config c;
  c.rows[0] = static_cast<uint8_t>(m);
  c.colsb[0] = static_cast<uint16_t>(4 * n);
  c.rows[1] = static_cast<uint8_t>(m);
  c.colsb[1] = static_cast<uint16_t>(4 * k);
  c.rows[2] = static_cast<uint8_t>(k);
  c.colsb[2] = static_cast<uint16_t>(4 * n);
  return c;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(AmxEmulator, ConfigurationReadsBackAndPaletteZeroReleases) {
  const Config c = product_config(5, 3, 7);
  emu::load_config(&c);
  uint8_t back[64];
  std::memset(back, 0xA5, sizeof(back));
  emu::store_config(back);
  EXPECT_EQ(std::memcmp(&c, back, sizeof(back)), 0);
  const Config none{0};
  emu::load_config(&none);
  emu::store_config(back);
  const uint8_t zero[64] = {};
  EXPECT_EQ(std::memcmp(zero, back, sizeof(back)), 0);
}

TEST(AmxEmulator, LoadStoreUseTheStrideAndZeroPastTheShape) {
  const Config c = product_config(5, 3, 7);
  emu::load_config(&c);
  const auto src = random_bytes(16 * 100, 1);
  emu::load(1, src.data(), 100);  // 5 rows x 12 bytes
  std::vector<uint8_t> out(16 * 64, 0xEE);
  emu::store(1, out.data(), 64);
  for (int r = 0; r < 16; ++r) {
    for (int b = 0; b < 64; ++b) {
      const uint8_t want = r < 5 && b < 12 ? src[r * 100 + b] : 0xEE;  // store writes 5 x 12
      ASSERT_EQ(out[r * 64 + b], want) << r << " " << b;
    }
  }
  // The bytes past the shape are zero: a wider view of the same tile shows them.
  Config wide = c;
  wide.colsb[3] = 64;
  wide.rows[3] = 16;
  emu::load_config(&wide);
  emu::load(1, src.data(), 100);
  emu::zero(3);
  std::vector<uint8_t> z(16 * 64, 0xEE);
  emu::store(3, z.data(), 64);
  for (uint8_t b : z) ASSERT_EQ(b, 0);
}

template <bool kSigned1, bool kSigned2>
void check_int8_product(int m, int k, int n, uint32_t seed) {
  const Config c = product_config(m, k, n);
  emu::load_config(&c);
  const auto a = random_bytes(static_cast<size_t>(m) * 4 * k, seed);
  auto b = random_bytes(static_cast<size_t>(k) * 4 * n, seed + 1);
  b[0] = 0x80;  // -128 signed, 128 unsigned
  b[1] = 0x7F;
  std::vector<int32_t> c0(static_cast<size_t>(m) * n);
  std::mt19937 rng(seed + 2);
  for (auto& v : c0) v = static_cast<int32_t>(rng() % 2001) - 1000;
  emu::load(0, c0.data(), 4 * n);
  emu::load(1, a.data(), 4 * k);
  emu::load(2, b.data(), 4 * n);
  if constexpr (kSigned1 && kSigned2) emu::dot_int8<true, true>(0, 1, 2);
  if constexpr (kSigned1 && !kSigned2) emu::dot_int8<true, false>(0, 1, 2);
  if constexpr (!kSigned1 && kSigned2) emu::dot_int8<false, true>(0, 1, 2);
  if constexpr (!kSigned1 && !kSigned2) emu::dot_int8<false, false>(0, 1, 2);
  std::vector<int32_t> got(static_cast<size_t>(m) * n);
  emu::store(0, got.data(), 4 * n);
  auto value = [](uint8_t x, bool is_signed) {
    return is_signed ? static_cast<int32_t>(static_cast<int8_t>(x)) : static_cast<int32_t>(x);
  };
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      int32_t want = c0[i * n + j];
      for (int e = 0; e < 4 * k; ++e) {
        want +=
            value(a[i * 4 * k + e], kSigned1) * value(b[(e / 4) * 4 * n + 4 * j + e % 4], kSigned2);
      }
      ASSERT_EQ(got[i * n + j], want) << m << "x" << k << "x" << n << " at " << i << "," << j;
    }
  }
}

TEST(AmxEmulator, Int8ProductsMatchTheirDefinitionOnOddShapes) {
  for (auto [m, k, n] : {std::array{16, 8, 16}, std::array{16, 16, 16}, std::array{5, 3, 7},
                         std::array{1, 1, 1}, std::array{13, 16, 2}}) {
    check_int8_product<true, true>(m, k, n, 10);
    check_int8_product<true, false>(m, k, n, 20);
    check_int8_product<false, true>(m, k, n, 30);
    check_int8_product<false, false>(m, k, n, 40);
  }
}

TEST(AmxEmulator, Int8SumsWrapAroundLikeDwordAdds) {
  const Config c = product_config(1, 1, 1);
  emu::load_config(&c);
  const int32_t start = INT32_MAX;
  const int8_t a[4] = {1, 0, 0, 0}, b[4] = {2, 0, 0, 0};
  emu::load(0, &start, 4);
  emu::load(1, a, 4);
  emu::load(2, b, 4);
  emu::dot_int8<true, true>(0, 1, 2);
  int32_t got = 0;
  emu::store(0, &got, 4);
  EXPECT_EQ(got, INT32_MIN + 1);
}

uint16_t bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return static_cast<uint16_t>(bits >> 16);  // exact for the values used here
}

TEST(AmxEmulator, Bf16ProductsAddOneAtATimeRoundedToNearestEven) {
  const Config c = product_config(1, 1, 1);
  emu::load_config(&c);
  // acc = 1, then two products of 2^-24 each: added one at a time, each add
  // is a tie that rounds to 1 (even); fused, they would make 1 + 2^-23.
  const float one = 1.0f;
  const uint16_t a[2] = {bf16(0x1p-12f), bf16(0x1p-12f)}, b[2] = {bf16(0x1p-12f), bf16(0x1p-12f)};
  emu::load(0, &one, 4);
  emu::load(1, a, 4);
  emu::load(2, b, 4);
  emu::dot_bf16(0, 1, 2);
  float got = 0;
  emu::store(0, &got, 4);
  EXPECT_EQ(got, 1.0f);
  // Exact small products over a 16 x 16 x 16 shape (K = 32 bf16).
  const Config big = product_config(16, 16, 16);
  emu::load_config(&big);
  std::vector<uint16_t> ta(16 * 32), tb(16 * 32);
  std::vector<float> want(16 * 16, 0.0f);
  for (int i = 0; i < 16 * 32; ++i) {
    ta[i] = bf16(static_cast<float>(i % 7 - 3));
    tb[i] = bf16(static_cast<float>(i % 5 - 2));
  }
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 16; ++n) {
      for (int e = 0; e < 32; ++e) {
        want[m * 16 + n] += static_cast<float>((m * 32 + e) % 7 - 3) *
                            static_cast<float>(((e / 2) * 32 + 2 * n + e % 2) % 5 - 2);
      }
    }
  }
  emu::zero(0);
  emu::load(1, ta.data(), 64);
  emu::load(2, tb.data(), 64);
  emu::dot_bf16(0, 1, 2);
  std::vector<float> out(16 * 16);
  emu::store(0, out.data(), 64);
  EXPECT_EQ(out, want);
}

TEST(AmxEmulatorDeathTest, MismatchedShapesFaultAsTheHardwareWould) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto signed_product = [](int dst, int src1, int src2) {
    emu::dot_int8<true, true>(dst, src1, src2);
  };
  Config c = product_config(4, 2, 3);
  c.rows[2] = 3;  // B must have src1.colsb / 4 = 2 rows
  EXPECT_DEATH(
      {
        emu::load_config(&c);
        signed_product(0, 1, 2);
      },
      "#UD: src2.rows != src1.colsb / 4");
  const Config ok = product_config(4, 2, 3);
  EXPECT_DEATH(
      {
        emu::load_config(&ok);
        signed_product(0, 1, 1);
      },
      "#UD: the same tile twice");
  EXPECT_DEATH(
      {
        emu::load_config(&ok);
        emu::zero(5);
      },
      "#UD: tile not configured");
}

}  // namespace
}  // namespace strata
