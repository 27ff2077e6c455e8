// StackPool: persistent, hash-consed pushdown stacks.
//
// A stack is an id; frame(id) = (pos: the top position, parent: the stack
// below, -1 at the bottom). make() returns the existing id for an existing
// (pos, parent), so equal stacks have equal ids and a set of stacks
// deduplicates by id: ambiguous grammars cannot multiply states. The pool is
// append-only with truncate(): callers that explore (mask walks, rollback)
// record size() and cut back to it, which forgets everything made since.
//
// Not thread-safe: one pool per matcher or walk.
#pragma once

#include <cstdint>
#include <vector>

namespace strata {

class StackPool {
 public:
  struct Frame {
    int32_t pos;
    int32_t parent;
  };

  StackPool();

  int32_t make(int32_t pos, int32_t parent);
  const Frame& frame(int32_t id) const { return frames_[id]; }
  int32_t size() const { return static_cast<int32_t>(frames_.size()); }
  // Forgets stacks with id >= n.
  void truncate(int32_t n);
  void clear() { truncate(0); }

 private:
  static uint64_t hash(int32_t pos, int32_t parent) {
    uint64_t x =
        (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
  }
  void grow();
  void erase(int32_t id);

  std::vector<Frame> frames_;
  std::vector<int32_t> slots_;  // open addressing, linear probing; -1 empty
  uint64_t mask_ = 0;
};

}  // namespace strata
