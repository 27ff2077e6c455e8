// FreeBlockQueue: the blocks with refcount 0, least recently freed first.
//
// An intrusive doubly linked list threaded through per-block prev/next
// indices, so push_back, pop_front and remove of any block are O(1) and
// allocation-free. The front is the next block to reuse (eviction end); a
// block freed later goes to the back. Owned by BlockPool. Not thread-safe.
// Invariant: each block id in [0, num_blocks) is in the list at most once.
#pragma once

#include <cstdint>
#include <vector>

namespace strata {

class FreeBlockQueue {
 public:
  // All blocks free, in id order (block 0 at the front).
  explicit FreeBlockQueue(int32_t num_blocks);

  int32_t size() const { return size_; }
  bool contains(int32_t block_id) const { return in_queue_[block_id] != 0; }

  // Removes and returns the front block. Precondition: size() > 0.
  int32_t pop_front();
  // Appends a block that is not in the queue.
  void push_back(int32_t block_id);
  // Unlinks a block that is in the queue.
  void remove(int32_t block_id);

  // Front to back; O(size). For tests and debugging.
  std::vector<int32_t> to_vector() const;

 private:
  static constexpr int32_t kNone = -1;

  std::vector<int32_t> prev_;  // [num_blocks]
  std::vector<int32_t> next_;  // [num_blocks]
  std::vector<uint8_t> in_queue_;
  int32_t head_ = kNone;
  int32_t tail_ = kNone;
  int32_t size_ = 0;
};

}  // namespace strata
