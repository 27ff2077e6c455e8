// DType: the element/block types of tensors, numbered exactly as GGML/GGUF
// numbers them (ggml_type), so a GGUF tensor's type field maps 1:1.
//
// Block-quantized types store `block_elems` consecutive elements of a row in
// `block_bytes` bytes; a row's length (ne[0]) must be a multiple of
// block_elems. Byte layouts of each block are defined in kernels/quant.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace strata {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

struct DTypeTraits {
  DType type;
  std::string_view name;  // "f32", "q8_0", ... as ggml names them
  uint32_t block_elems;   // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
  bool is_supported;      // strata has kernels for it (matmul/dequant)
};

// Traits of a known type; std::nullopt for a number that is not a ggml type
// strata knows (including ggml's removed/unsupported ids).
std::optional<DTypeTraits> dtype_traits(uint32_t raw_type);
const DTypeTraits& dtype_traits(DType type);  // type must be known

inline std::string_view dtype_name(DType t) {
  return dtype_traits(t).name;
}

// Bytes of a row of `n_elems` elements; n_elems must be a multiple of the
// block size (checked by callers that read files).
inline size_t dtype_row_bytes(DType t, int64_t n_elems) {
  const DTypeTraits& tr = dtype_traits(t);
  return static_cast<size_t>(n_elems / tr.block_elems) * tr.block_bytes;
}

std::optional<DType> dtype_from_name(std::string_view name);

}  // namespace strata
