#include "kernels/fp16.h"

#include <gtest/gtest.h>

#include <cmath>

namespace strata {
namespace {

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // rounds to inf
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (0)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 ulp tie -> even (2)
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);
  EXPECT_EQ(fp32_to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(NAN) & 0x7e00, 0x7e00);
  EXPECT_EQ(fp16_to_fp32(0x3555), 0.333251953125f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));
}

TEST(Fp16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = fp16_to_fp32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
  }
}

TEST(Fp16, RoundsToNearest) {
  // Midpoints between consecutive positive halves go to the even one; points
  // just off the midpoint go to the nearer one.
  for (uint32_t h = 0x0001; h < 0x7bff; h += 37) {
    const float lo = fp16_to_fp32(static_cast<uint16_t>(h));
    const float hi = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    const float mid = 0.5f * (lo + hi);
    EXPECT_EQ(fp32_to_fp16(mid), (h & 1) ? h + 1 : h);
    EXPECT_EQ(fp32_to_fp16(std::nextafter(mid, 0.0f)), h);
    EXPECT_EQ(fp32_to_fp16(std::nextafter(mid, INFINITY)), h + 1);
  }
}

TEST(Bf16, KnownValues) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(fp32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie -> even
  EXPECT_EQ(fp32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie -> even
  EXPECT_EQ(fp32_to_bf16(-3.0f), 0xc040);
  EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(NAN))));
  EXPECT_EQ(fp32_to_bf16(INFINITY), 0x7f80);
}

}  // namespace
}  // namespace strata
