#include "grammar/stack_pool.h"

#include <algorithm>
#include <cstddef>

namespace strata {

StackPool::StackPool() {
  slots_.assign(1024, -1);
  mask_ = slots_.size() - 1;
}

int32_t StackPool::make(int32_t pos, int32_t parent) {
  uint64_t i = hash(pos, parent) & mask_;
  while (true) {
    const int32_t id = slots_[i];
    if (id < 0) break;
    if (frames_[id].pos == pos && frames_[id].parent == parent) return id;
    i = (i + 1) & mask_;
  }
  const int32_t id = static_cast<int32_t>(frames_.size());
  frames_.push_back({pos, parent});
  slots_[i] = id;
  if (frames_.size() * 2 > slots_.size()) grow();
  return id;
}

void StackPool::grow() {
  slots_.assign(slots_.size() * 2, -1);
  mask_ = slots_.size() - 1;
  for (size_t id = 0; id < frames_.size(); ++id) {
    uint64_t i = hash(frames_[id].pos, frames_[id].parent) & mask_;
    while (slots_[i] >= 0) i = (i + 1) & mask_;
    slots_[i] = static_cast<int32_t>(id);
  }
}

// Backward-shift deletion keeps linear probing chains intact.
void StackPool::erase(int32_t id) {
  uint64_t i = hash(frames_[id].pos, frames_[id].parent) & mask_;
  while (slots_[i] != id) i = (i + 1) & mask_;
  uint64_t j = i;
  while (true) {
    j = (j + 1) & mask_;
    const int32_t other = slots_[j];
    if (other < 0) break;
    const uint64_t home = hash(frames_[other].pos, frames_[other].parent) & mask_;
    // Move `other` into the hole at i unless its home lies cyclically in (i, j].
    const bool in_range = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!in_range) {
      slots_[i] = other;
      i = j;
    }
  }
  slots_[i] = -1;
}

void StackPool::truncate(int32_t n) {
  if (n >= size()) return;
  for (int32_t id = size() - 1; id >= n; --id) erase(id);
  frames_.resize(n);
}

}  // namespace strata
