// Internal to src/kernels: how matmul encodes activations for each weight
// type, and the scalar per-row dot products that define the results.
//
// Weight type   activation encoding    dot product
//   F32           F32                    fp32
//   F16           F16 (as llama.cpp)     fp32 over fp16-rounded inputs
//   BF16          BF16 (as llama.cpp)    fp32 over bf16-rounded inputs
//   Q8_0          Q8_0 blocks            int32 per block, fp32 across blocks
//   Q4_0          Q8_0 blocks            int32 per block, one fp32 FMA per block
//   Q4_K          Q8_K blocks            int32 per 64 elements, one fp32 FMA each
//   Q6_K          Q8_K blocks            int32 per sub-block, fp32 across blocks
// Q8_0 activations are encoded as llama.cpp's AVX2 path does (127/amax,
// round to nearest even), and the Q4_0 / Q4_K accumulation follows its
// repacked kernels step for step, so that both engines round alike: a
// last-bit difference upstream of an 8-bit activation encoding can flip a
// code, which moves the result by a whole quantization step.
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/dtype.h"

namespace strata::vec_dot {

DType activation_type(DType weight_type);

// Encodes one activation row of `cols` floats as activation_type(weight_type)
// into dst (activation_row_bytes bytes).
void encode_activation_row(DType weight_type, const float* x, int64_t cols, void* dst);
size_t activation_row_bytes(DType weight_type, int64_t cols);

// Scalar dot of one weight row with one encoded activation row.
float dot_ref(DType weight_type, const void* w_row, const void* x_enc, int64_t cols);

}  // namespace strata::vec_dot
