#include "kv/free_block_queue.h"

#include <cassert>

namespace strata {

FreeBlockQueue::FreeBlockQueue(int32_t num_blocks)
    : prev_(num_blocks, kNone), next_(num_blocks, kNone), in_queue_(num_blocks, 0) {
  for (int32_t id = 0; id < num_blocks; ++id) push_back(id);
}

int32_t FreeBlockQueue::pop_front() {
  assert(size_ > 0);
  const int32_t id = head_;
  remove(id);
  return id;
}

void FreeBlockQueue::push_back(int32_t block_id) {
  assert(!contains(block_id));
  prev_[block_id] = tail_;
  next_[block_id] = kNone;
  if (tail_ == kNone) {
    head_ = block_id;
  } else {
    next_[tail_] = block_id;
  }
  tail_ = block_id;
  in_queue_[block_id] = 1;
  ++size_;
}

void FreeBlockQueue::remove(int32_t block_id) {
  assert(contains(block_id));
  const int32_t p = prev_[block_id];
  const int32_t n = next_[block_id];
  if (p == kNone) {
    head_ = n;
  } else {
    next_[p] = n;
  }
  if (n == kNone) {
    tail_ = p;
  } else {
    prev_[n] = p;
  }
  prev_[block_id] = next_[block_id] = kNone;
  in_queue_[block_id] = 0;
  --size_;
}

std::vector<int32_t> FreeBlockQueue::to_vector() const {
  std::vector<int32_t> out;
  out.reserve(size_);
  for (int32_t id = head_; id != kNone; id = next_[id]) out.push_back(id);
  return out;
}

}  // namespace strata
