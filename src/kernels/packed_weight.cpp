#include "kernels/packed_weight.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "kernels/amx_support.h"
#include "kernels/dispatch.h"
#include "kernels/matmul_avx512.h"
#include "kernels/matmul_kquant_avx512.h"
#include "util/chunk_claims.h"

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

bool is_tiled(DType type) {
  return kernel_isa() == KernelIsa::kAvx512Vnni &&
         (avx512::matmul_supports(type) || is_tiled_kquant(type));
}

// Runs fn(begin, end) over `items` on the pool's threads, in chunks taken as
// threads ask (the copy's pages fault in as they are first written, at
// uneven cost), or here.
template <class Fn>
void run_split(ThreadPool* pool, int64_t items, Fn&& fn) {
  if (pool != nullptr && pool->num_threads() > 1) {
    ChunkClaims claims(items, pool->num_threads());
    pool->run([&](int, int) {
      int64_t begin, end;
      while (claims.claim(&begin, &end)) fn(begin, end);
    });
  } else {
    fn(0, items);
  }
}

}  // namespace

void PackedWeight::FreeBytes::operator()(uint8_t* p) const {
  std::free(p);
}

bool PackedWeight::is_packable(DType type) {
  return is_tiled(type) || copies_as_is(type);
}

bool PackedWeight::copies_as_is(DType type) {
  return type == DType::kF32 || type == DType::kF16 || type == DType::kBF16;
}

std::unique_ptr<PackedWeight> PackedWeight::pack(const WeightView& w, ThreadPool* pool) {
  if (w.layout != WeightLayout::kGguf || !is_packable(w.type) || w.rows <= 0) return nullptr;
  const bool tiled = is_tiled(w.type);
  const bool kquant = tiled && is_tiled_kquant(w.type);
  const size_t bytes = !tiled   ? w.row_bytes * static_cast<size_t>(w.rows)
                       : kquant ? avx512_kquant::tiled_bytes(w.type, w.rows, w.cols)
                                : avx512::tiled_bytes(w.type, w.rows, w.cols);
  const size_t align = bytes >= kHugePage ? kHugePage : 64;
  auto* raw = static_cast<uint8_t*>(std::aligned_alloc(align, (bytes + align - 1) / align * align));
  if (raw == nullptr) return nullptr;  // no memory for a copy: the GGUF layout still works
  // Huge pages where the kernel allows them only when asked (the "madvise"
  // setting of transparent_hugepage): a 2 MiB fault instead of 512 of 4 KiB
  // each. Advice only: without it the copy works the same.
  if (align == kHugePage) madvise(raw, (bytes + align - 1) / align * align, MADV_HUGEPAGE);
  std::unique_ptr<PackedWeight> p(new PackedWeight());
  p->bytes_.reset(raw);
  p->size_bytes_ = bytes;
  p->view_ = w;
  p->view_.data = raw;
  if (!tiled) {
    // The same bytes, each thread copying (and first touching) its rows.
    const auto* src = static_cast<const uint8_t*>(w.data);
    run_split(pool, w.rows, [&](int64_t begin, int64_t end) {
      std::memcpy(raw + static_cast<size_t>(begin) * w.row_bytes,
                  src + static_cast<size_t>(begin) * w.row_bytes,
                  static_cast<size_t>(end - begin) * w.row_bytes);
    });
    return p;
  }
  const auto pack_tiles = kquant ? avx512_kquant::pack_tiles : avx512::pack_tiles;
  const int64_t num_tiles = (w.rows + avx512::kTiledRows - 1) / avx512::kTiledRows;
  run_split(pool, num_tiles, [&](int64_t begin, int64_t end) { pack_tiles(w, begin, end, raw); });
  p->view_.layout = WeightLayout::kTiled16;
  return p;
}

}  // namespace strata
