#include "kernels/amx_emulator.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata::amx_emulator {
namespace {

constexpr int kTiles = 8;
constexpr int kMaxRows = 16;
constexpr int kMaxColsb = 64;

struct State {
  bool configured = false;
  uint8_t palette = 0;
  uint8_t start_row = 0;
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
  alignas(64) uint8_t data[kTiles][kMaxRows][kMaxColsb] = {};
};

thread_local State t_state;

[[noreturn]] void fault(const char* what, int tile) {
  std::fprintf(stderr, "AMX emulator: #UD: %s (tmm%d)\n", what, tile);
  std::abort();
}

void check_tile(int tile) {
  if (!t_state.configured) fault("tile instruction without a tile configuration", tile);
  if (tile < 0 || tile >= kTiles) fault("no such tile", tile);
  if (t_state.rows[tile] == 0 || t_state.colsb[tile] == 0) fault("tile not configured", tile);
}

void zero_rows_from(int tile, int row) {
  for (int r = row; r < kMaxRows; ++r) std::memset(t_state.data[tile][r], 0, kMaxColsb);
}

// The #UD conditions shared by every tdp* instruction: src1 holds M rows of
// K dwords, src2 K rows of N dwords, dst M rows of N dwords.
void check_product(int dst, int src1, int src2) {
  check_tile(dst);
  check_tile(src1);
  check_tile(src2);
  if (dst == src1 || dst == src2 || src1 == src2) fault("the same tile twice", dst);
  const State& s = t_state;
  if (s.colsb[dst] % 4 != 0 || s.colsb[src1] % 4 != 0) fault("colsb not a multiple of 4", dst);
  if (s.rows[dst] != s.rows[src1]) fault("dst.rows != src1.rows", dst);
  if (s.colsb[src2] != s.colsb[dst]) fault("src2.colsb != dst.colsb", src2);
  if (s.rows[src2] != s.colsb[src1] / 4) fault("src2.rows != src1.colsb / 4", src2);
}

template <bool kSigned>
int32_t byte_value(uint8_t b) {
  if constexpr (kSigned) return static_cast<int8_t>(b);
  return b;
}

// bf16 as fp32, denormals read as zero.
float bf16_daz(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  if ((bits & 0x7F800000u) == 0) bits &= 0x80000000u;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

float flush_denormal(float f) {
  return std::fpclassify(f) == FP_SUBNORMAL ? std::copysign(0.0f, f) : f;
}

// dst[m][n] (an Acc in each dword) gets add(acc, src1 row m dword k, src2
// row k dword n) for k = 0, 1, ... in order; the rest of dst is zeroed.
template <class Acc, class Add>
void product(int dst, int src1, int src2, Add&& add) {
  check_product(dst, src1, src2);
  State& s = t_state;
  const int m_rows = s.rows[dst], n_dwords = s.colsb[dst] / 4, k_dwords = s.colsb[src1] / 4;
  for (int m = 0; m < m_rows; ++m) {
    uint8_t* out = s.data[dst][m];
    for (int n = 0; n < n_dwords; ++n) {
      Acc acc;
      std::memcpy(&acc, out + 4 * n, sizeof(acc));
      for (int k = 0; k < k_dwords; ++k) add(acc, s.data[src1][m] + 4 * k, s.data[src2][k] + 4 * n);
      std::memcpy(out + 4 * n, &acc, sizeof(acc));
    }
    std::memset(out + 4 * n_dwords, 0, kMaxColsb - 4 * n_dwords);
  }
  zero_rows_from(dst, m_rows);
}

}  // namespace

void load_config(const void* config) {
  const auto* c = static_cast<const uint8_t*>(config);
  State& s = t_state;
  if (c[0] == 0) {
    release();
    return;
  }
  if (c[0] != 1) fault("palette other than 0 or 1", -1);
  for (int i = 2; i < 16; ++i) {
    if (c[i] != 0) fault("reserved configuration bytes not zero", -1);
  }
  s.palette = c[0];
  s.start_row = c[1];
  std::memcpy(s.colsb, c + 16, sizeof(s.colsb));
  std::memcpy(s.rows, c + 48, sizeof(s.rows));
  for (int t = 0; t < 16; ++t) {
    const bool used = s.colsb[t] != 0 || s.rows[t] != 0;
    if (t >= kTiles && used) fault("palette 1 has 8 tiles", t);
    if (used && (s.colsb[t] == 0 || s.rows[t] == 0)) fault("a tile with rows but no columns", t);
    if (s.colsb[t] > kMaxColsb || s.rows[t] > kMaxRows) fault("tile larger than 16 x 64", t);
  }
  std::memset(s.data, 0, sizeof(s.data));
  s.configured = true;
}

void store_config(void* config) {
  auto* c = static_cast<uint8_t*>(config);
  std::memset(c, 0, 64);
  if (!t_state.configured) return;
  c[0] = t_state.palette;
  c[1] = t_state.start_row;
  std::memcpy(c + 16, t_state.colsb, sizeof(t_state.colsb));
  std::memcpy(c + 48, t_state.rows, sizeof(t_state.rows));
}

void release() {
  t_state = State{};
}

void load(int tile, const void* base, long stride) {
  check_tile(tile);
  const auto* src = static_cast<const uint8_t*>(base);
  const int rows = t_state.rows[tile], colsb = t_state.colsb[tile];
  for (int r = 0; r < rows; ++r) {
    uint8_t* row = t_state.data[tile][r];
    std::memcpy(row, src + static_cast<long>(r) * stride, colsb);
    std::memset(row + colsb, 0, kMaxColsb - colsb);
  }
  zero_rows_from(tile, rows);
}

void store(int tile, void* base, long stride) {
  check_tile(tile);
  auto* dst = static_cast<uint8_t*>(base);
  for (int r = 0; r < t_state.rows[tile]; ++r) {
    std::memcpy(dst + static_cast<long>(r) * stride, t_state.data[tile][r], t_state.colsb[tile]);
  }
}

void zero(int tile) {
  check_tile(tile);
  zero_rows_from(tile, 0);
}

template <bool kSigned1, bool kSigned2>
void dot_int8(int dst, int src1, int src2) {
  product<uint32_t>(dst, src1, src2, [](uint32_t& acc, const uint8_t* a, const uint8_t* b) {
    int32_t dot = 0;
    for (int i = 0; i < 4; ++i) dot += byte_value<kSigned1>(a[i]) * byte_value<kSigned2>(b[i]);
    acc += static_cast<uint32_t>(dot);  // wraps, as the hardware's dword add
  });
}

template void dot_int8<true, true>(int, int, int);
template void dot_int8<true, false>(int, int, int);
template void dot_int8<false, true>(int, int, int);
template void dot_int8<false, false>(int, int, int);

void dot_bf16(int dst, int src1, int src2) {
  product<float>(dst, src1, src2, [](float& acc, const uint8_t* a, const uint8_t* b) {
    for (int i = 0; i < 2; ++i) {
      // volatile: one rounding per product and per add, never fused.
      volatile float p = bf16_daz(a + 2 * i) * bf16_daz(b + 2 * i);
      acc = flush_denormal(acc + p);
    }
  });
}

}  // namespace strata::amx_emulator
