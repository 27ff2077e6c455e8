// PackedWeight: a copy of one weight, made once when a model loads, in the
// layout this CPU's matmul kernel reads fastest and in the process's own
// memory:
//   - Q4_0/Q8_0 on AVX-512 VNNI CPUs, and Q4_K/Q6_K on those without a
//     usable AMX unit: WeightLayout::kTiled16, so the kernel streams one
//     sequential run per 16-row tile and never transposes at run time. Same
//     size as the GGUF bytes (plus at most 63 bytes per tile; Q6_K 32 bytes
//     per super-block of a tile, 1%).
//   - F32/F16/BF16, on every CPU: the GGUF bytes as they are (kGguf), copied
//     out of the file mapping. Decode streams every weight once per token,
//     and it streams anonymous memory faster than the mapped file's page
//     cache: 1.1B F16 decode went from 14.8-16.2 to 19.9-23.2 tok/s on a
//     Zen 5 EPYC (docs/architecture.md, Kernels).
// Results are the same bit for bit: only where the bytes live, and for the
// tiled layouts their order, changes, never the arithmetic. The model
// releases the file's pages of every weight it copies, so the copy is what
// stays resident.
//
// Ownership: owns its 64-byte aligned buffer (2 MiB aligned when it is that
// large, and advised for transparent huge pages); view() points into it and
// is valid while the PackedWeight lives. Immutable after pack(); safe to
// read from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/matmul.h"

namespace strata {

class PackedWeight {
 public:
  // Whether pack() would copy a weight of this type on this CPU (at the
  // current kernel_isa()).
  static bool is_packable(DType type);
  // Whether pack() copies a weight of this type byte for byte (F32/F16/BF16:
  // the GGUF layout, only moved into memory of its own).
  static bool copies_as_is(DType type);

  // The copy of w (a kGguf weight whose rows are whole blocks), repacked
  // where this CPU's kernel reads another layout, or nullptr when w.type is
  // not copied here (a type no kernel above repacks, and not a float type).
  // Copies on the pool's threads when one is given.
  static std::unique_ptr<PackedWeight> pack(const WeightView& w, ThreadPool* pool = nullptr);

  const WeightView& view() const { return view_; }
  size_t size_bytes() const { return size_bytes_; }

 private:
  struct FreeBytes {
    void operator()(uint8_t* p) const;
  };
  PackedWeight() = default;
  std::unique_ptr<uint8_t, FreeBytes> bytes_;
  size_t size_bytes_ = 0;
  WeightView view_;
};

}  // namespace strata
