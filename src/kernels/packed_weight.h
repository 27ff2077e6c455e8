// PackedWeight: a copy of one weight in the layout this CPU's matmul kernel
// reads fastest (WeightLayout::kTiled16 for Q4_0/Q8_0 on AVX-512 VNNI CPUs,
// and for Q4_K/Q6_K on those without a usable AMX unit),
// built once when a model loads, so the kernel streams one sequential run
// per 16-row tile and never transposes at run time. Same size as the GGUF
// bytes (plus at most 63 bytes per tile; Q6_K 32 bytes per super-block of a
// tile, 1%) and the same results bit for bit: only the order of the bytes
// changes, not the arithmetic.
//
// Ownership: owns its 64-byte aligned buffer; view() points into it and is
// valid while the PackedWeight lives. Immutable after pack(); safe to read
// from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/matmul.h"

namespace strata {

class PackedWeight {
 public:
  // Whether pack() would repack a weight of this type on this CPU (at the
  // current kernel_isa()).
  static bool is_packable(DType type);

  // The repacked copy of w (a kGguf weight whose rows are whole blocks), or
  // nullptr when this CPU's kernel for w.type reads the GGUF layout
  // directly. Packs on the pool's threads when one is given.
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
