#include "kernels/matmul.h"

#include <algorithm>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/matmul_avx2.h"
#include "kernels/matmul_avx512.h"
#include "kernels/vec_dot.h"

namespace strata {
namespace {

// Activations encoded once per matmul into a buffer owned by the calling
// thread and reused across calls: no allocation after warm-up.
uint8_t* activation_scratch(size_t bytes) {
  thread_local std::vector<uint8_t> buffer;
  constexpr size_t kAlign = 64;
  if (buffer.size() < bytes + kAlign) buffer.resize(bytes + kAlign);
  const auto addr = reinterpret_cast<uintptr_t>(buffer.data());
  return buffer.data() + ((kAlign - addr % kAlign) % kAlign);
}

// Below this many activation rows the encoding runs on the calling thread:
// a second pool round-trip costs more than it saves.
constexpr int64_t kParallelEncodeRows = 8;

void matmul_rows_scalar(const WeightView& w, const uint8_t* x_enc, size_t x_row_bytes, int64_t n,
                        float* y, int64_t row_begin, int64_t row_end) {
  const auto* wd = static_cast<const uint8_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* w_row = wd + static_cast<size_t>(r) * w.row_bytes;
    for (int64_t t = 0; t < n; ++t) {
      y[t * w.rows + r] = vec_dot::dot_ref(w.type, w_row, x_enc + t * x_row_bytes, w.cols);
    }
  }
}

}  // namespace

void matmul(const WeightView& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
  if (n <= 0 || w.rows <= 0) return;
  enum class Path { kScalar, kAvx2, kAvx512 };
  Path path = Path::kScalar;
  if (kernel_isa() == KernelIsa::kAvx512Vnni && avx512::matmul_supports(w.type, n)) {
    path = Path::kAvx512;
  } else if (kernel_isa_has_avx2(kernel_isa()) && avx2::matmul_supports(w.type)) {
    path = Path::kAvx2;
  }
  size_t x_row_bytes = 0;
  switch (path) {
    case Path::kAvx512:
      x_row_bytes = avx512::activation_row_bytes(w.type, w.cols);
      break;
    case Path::kAvx2:
      x_row_bytes = avx2::activation_row_bytes(w.type, w.cols);
      break;
    case Path::kScalar:
      x_row_bytes = vec_dot::activation_row_bytes(w.type, w.cols);
      break;
  }
  const uint8_t* x_enc = reinterpret_cast<const uint8_t*>(x);
  if (vec_dot::activation_type(w.type) != DType::kF32) {
    uint8_t* scratch = activation_scratch(x_row_bytes * static_cast<size_t>(n));
    auto encode = [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const float* src = x + t * w.cols;
        uint8_t* dst = scratch + t * x_row_bytes;
        switch (path) {
          case Path::kAvx512:
            avx512::encode_activation_row(w.type, src, w.cols, dst);
            break;
          case Path::kAvx2:
            avx2::encode_activation_row(w.type, src, w.cols, dst);
            break;
          case Path::kScalar:
            vec_dot::encode_activation_row(w.type, src, w.cols, dst);
            break;
        }
      }
    };
    if (n < kParallelEncodeRows || pool.num_threads() == 1) {
      encode(0, n);
    } else {
      pool.run([&](int ith, int nth) {
        int64_t begin, end;
        split_range(n, ith, nth, &begin, &end);
        encode(begin, end);
      });
    }
    x_enc = scratch;
  }
  pool.run([&](int ith, int nth) {
    int64_t begin, end;
    switch (path) {
      case Path::kAvx512:
        avx512::split_rows(w.rows, ith, nth, &begin, &end);
        avx512::matmul_rows(w, x_enc, x_row_bytes, n, y, begin, end);
        break;
      case Path::kAvx2:
        avx2::split_rows(w.rows, ith, nth, &begin, &end);
        avx2::matmul_rows(w, x_enc, x_row_bytes, n, y, begin, end);
        break;
      case Path::kScalar:
        split_range(w.rows, ith, nth, &begin, &end);
        matmul_rows_scalar(w, x_enc, x_row_bytes, n, y, begin, end);
        break;
    }
  });
}

void matmul_reference(const WeightView& w, const float* x, int64_t n, float* y) {
  const size_t x_row_bytes = vec_dot::activation_row_bytes(w.type, w.cols);
  std::vector<uint8_t> x_enc(x_row_bytes);
  const auto* wd = static_cast<const uint8_t*>(w.data);
  for (int64_t t = 0; t < n; ++t) {
    vec_dot::encode_activation_row(w.type, x + t * w.cols, w.cols, x_enc.data());
    for (int64_t r = 0; r < w.rows; ++r) {
      y[t * w.rows + r] =
          vec_dot::dot_ref(w.type, wd + static_cast<size_t>(r) * w.row_bytes, x_enc.data(), w.cols);
    }
  }
}

}  // namespace strata
