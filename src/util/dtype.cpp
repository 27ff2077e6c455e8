#include "util/dtype.h"

#include <array>

namespace strata {
namespace {

constexpr std::array<DTypeTraits, 20> kTraits = {{
    {DType::kF32, "f32", 1, 4, true},       {DType::kF16, "f16", 1, 2, true},
    {DType::kQ4_0, "q4_0", 32, 18, true},   {DType::kQ4_1, "q4_1", 32, 20, false},
    {DType::kQ5_0, "q5_0", 32, 22, false},  {DType::kQ5_1, "q5_1", 32, 24, false},
    {DType::kQ8_0, "q8_0", 32, 34, true},   {DType::kQ8_1, "q8_1", 32, 36, false},
    {DType::kQ2_K, "q2_K", 256, 84, false}, {DType::kQ3_K, "q3_K", 256, 110, false},
    {DType::kQ4_K, "q4_K", 256, 144, true}, {DType::kQ5_K, "q5_K", 256, 176, false},
    {DType::kQ6_K, "q6_K", 256, 210, true}, {DType::kQ8_K, "q8_K", 256, 292, false},
    {DType::kI8, "i8", 1, 1, false},        {DType::kI16, "i16", 1, 2, false},
    {DType::kI32, "i32", 1, 4, false},      {DType::kI64, "i64", 1, 8, false},
    {DType::kF64, "f64", 1, 8, false},      {DType::kBF16, "bf16", 1, 2, true},
}};

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t raw_type) {
  for (const auto& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == raw_type) return t;
  }
  return std::nullopt;
}

const DTypeTraits& dtype_traits(DType type) {
  for (const auto& t : kTraits) {
    if (t.type == type) return t;
  }
  return kTraits[0];  // unreachable for valid enum values
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& t : kTraits) {
    if (t.name == name) return t.type;
  }
  return std::nullopt;
}

}  // namespace strata
