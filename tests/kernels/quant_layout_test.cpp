// Pins the byte layouts of the GGUF block types with hand-built blocks whose
// decoded values are worked out by hand.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/fp16.h"
#include "kernels/quant.h"

namespace strata {
namespace {

constexpr uint16_t kHalfOne = 0x3c00;   // 1.0
constexpr uint16_t kHalfHalf = 0x3800;  // 0.5

TEST(QuantLayout, Q8_0) {
  BlockQ8_0 b[2] = {};
  b[0].d = kHalfHalf;
  b[1].d = 0x4000;  // 2.0
  for (int i = 0; i < 32; ++i) {
    b[0].qs[i] = static_cast<int8_t>(i - 16);
    b[1].qs[i] = static_cast<int8_t>(i == 31 ? -127 : i);
  }
  std::vector<float> y(64);
  dequantize_row(DType::kQ8_0, b, y.data(), 64);
  EXPECT_EQ(y[0], -8.0f);
  EXPECT_EQ(y[31], 7.5f);
  EXPECT_EQ(y[32 + 5], 10.0f);
  EXPECT_EQ(y[63], -254.0f);
}

TEST(QuantLayout, Q4_0LowNibblesFirstHalf) {
  BlockQ4_0 b = {};
  b.d = 0x4000;                                 // 2.0
  b.qs[0] = 0x3A;                               // elem 0 = 10-8 = 2, elem 16 = 3-8 = -5
  b.qs[15] = 0xF0;                              // elem 15 = 0-8 = -8, elem 31 = 15-8 = 7
  for (int i = 1; i < 15; ++i) b.qs[i] = 0x88;  // zeros
  std::vector<float> y(32);
  dequantize_row(DType::kQ4_0, &b, y.data(), 32);
  EXPECT_EQ(y[0], 4.0f);
  EXPECT_EQ(y[16], -10.0f);
  EXPECT_EQ(y[15], -16.0f);
  EXPECT_EQ(y[31], 14.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[17], 0.0f);
}

TEST(QuantLayout, Q4_KScalePackingAndNibbleOrder) {
  BlockQ4_K b = {};
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  // Sub-block 0: sc = low 6 bits of scales[0] = 5, m = low 6 of scales[4] = 7.
  // Sub-block 4: sc = (scales[8] & 0xF) | (scales[0] >> 6) << 4 = 2 | 3<<4 = 50,
  //              m  = (scales[8] >> 4)  | (scales[4] >> 6) << 4 = 9 | 1<<4 = 25.
  b.scales[0] = 0xC5;
  b.scales[4] = 0x47;
  b.scales[8] = 0x92;
  // Sub-block 1: sc = scales[1] & 63 = 1, m = scales[5] & 63 = 0.
  b.scales[1] = 0x01;
  // Sub-block 5: sc = (scales[9] & 0xF) | (scales[1] >> 6) << 4 = 4, m = (scales[9] >> 4) = 0.
  b.scales[9] = 0x04;
  b.qs[0] = 0x3A;   // elem 0 (sub 0) = 10, elem 32 (sub 1) = 3
  b.qs[64] = 0xB7;  // elem 128 (sub 4) = 7, elem 160 (sub 5) = 11
  std::vector<float> y(256);
  dequantize_row(DType::kQ4_K, &b, y.data(), 256);
  EXPECT_EQ(y[0], 1.0f * 5 * 10 - 0.5f * 7);
  EXPECT_EQ(y[1], -0.5f * 7);
  EXPECT_EQ(y[32], 1.0f * 1 * 3);
  EXPECT_EQ(y[128], 1.0f * 50 * 7 - 0.5f * 25);
  EXPECT_EQ(y[129], -0.5f * 25);
  EXPECT_EQ(y[160], 1.0f * 4 * 11);
  EXPECT_EQ(y[255], 0.0f);
}

TEST(QuantLayout, Q6_KInterleaving) {
  BlockQ6_K b = {};
  // All q default to (0 | 0) - 32 = -32; scales default 0 so untouched
  // elements decode to 0.
  b.d = kHalfOne;
  b.scales[0] = 2;
  b.scales[2] = -3;
  b.scales[4] = 4;
  b.scales[6] = 5;
  b.ql[0] = 0x5A;   // elem 0 low = 10, elem 64 low = 5
  b.ql[32] = 0x3C;  // elem 32 low = 12, elem 96 low = 3
  b.qh[0] = 0x9C;   // bits: elem0 = 0, elem32 = 3, elem64 = 1, elem96 = 2
  // Second half, l = 17: elem 145 uses ql[81] low, qh[49] bits 0-1, scales[9].
  b.scales[9] = -1;
  b.ql[81] = 0x0F;
  b.qh[49] = 0x03;
  std::vector<float> y(256);
  dequantize_row(DType::kQ6_K, &b, y.data(), 256);
  EXPECT_EQ(y[0], 2.0f * (10 - 32));
  EXPECT_EQ(y[32], -3.0f * ((12 | 48) - 32));
  EXPECT_EQ(y[64], 4.0f * ((5 | 16) - 32));
  EXPECT_EQ(y[96], 5.0f * ((3 | 32) - 32));
  EXPECT_EQ(y[1], 2.0f * -32);
  EXPECT_EQ(y[145], -1.0f * (63 - 32));
  EXPECT_EQ(y[144], -1.0f * -32);
  EXPECT_EQ(y[200], 0.0f);  // scales[12] == 0
}

TEST(QuantLayout, F16AndBf16Rows) {
  const uint16_t h[3] = {kHalfOne, 0xc000, 0x3555};
  float y[3];
  dequantize_row(DType::kF16, h, y, 3);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], 0.333251953125f);
  const uint16_t bf[2] = {0x3f80, 0xc040};
  dequantize_row(DType::kBF16, bf, y, 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -3.0f);
}

}  // namespace
}  // namespace strata
