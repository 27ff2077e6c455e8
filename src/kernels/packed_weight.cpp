#include "kernels/packed_weight.h"

#include <cstdlib>

#include "kernels/amx_support.h"
#include "kernels/dispatch.h"
#include "kernels/matmul_avx512.h"
#include "kernels/matmul_kquant_avx512.h"

namespace strata {
namespace {

// Large buffers start on a 2 MiB boundary so transparent huge pages can
// back them (fewer TLB misses while a decode step streams every weight).
constexpr size_t kHugePage = size_t{2} << 20;

// Q4_K/Q6_K are packed where only the VNNI kernel runs them: the AMX kernel reads
// the GGUF layout (per shape and n it may take any K-quant matmul).
bool is_tiled_kquant(DType type) {
  return avx512_kquant::tiled_supports(type) && !amx_support().usable();
}

}  // namespace

void PackedWeight::FreeBytes::operator()(uint8_t* p) const {
  std::free(p);
}

bool PackedWeight::is_packable(DType type) {
  return kernel_isa() == KernelIsa::kAvx512Vnni &&
         (avx512::matmul_supports(type) || is_tiled_kquant(type));
}

std::unique_ptr<PackedWeight> PackedWeight::pack(const WeightView& w, ThreadPool* pool) {
  if (w.layout != WeightLayout::kGguf || !is_packable(w.type) || w.rows <= 0) return nullptr;
  const bool kquant = is_tiled_kquant(w.type);
  const size_t bytes = kquant ? avx512_kquant::tiled_bytes(w.type, w.rows, w.cols)
                              : avx512::tiled_bytes(w.type, w.rows, w.cols);
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  auto* raw = static_cast<uint8_t*>(std::aligned_alloc(align, (bytes + align - 1) / align * align));
  if (raw == nullptr) return nullptr;  // no memory for a copy: the GGUF layout still works
  const auto pack_tiles = kquant ? avx512_kquant::pack_tiles : avx512::pack_tiles;
  std::unique_ptr<PackedWeight> p(new PackedWeight());
  p->bytes_.reset(raw);
  p->size_bytes_ = bytes;
  const int64_t num_tiles = (w.rows + avx512::kTiledRows - 1) / avx512::kTiledRows;
  if (pool != nullptr && pool->num_threads() > 1) {
    pool->run([&](int ith, int nth) {
      int64_t begin, end;
      split_range(num_tiles, ith, nth, &begin, &end);
      pack_tiles(w, begin, end, raw);
    });
  } else {
    pack_tiles(w, 0, num_tiles, raw);
  }
  p->view_ = w;
  p->view_.data = raw;
  p->view_.layout = WeightLayout::kTiled16;
  return p;
}

}  // namespace strata
