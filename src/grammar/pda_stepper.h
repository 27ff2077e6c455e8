// PdaStepper: one byte step of a set of pushdown stacks over a
// CompiledGrammar, with the epsilon closure (calls push, finished rules pop).
//
// A StackSet holds only "reading" stacks (their top position has a byte
// edge), deduplicated, plus `bottom_popped`: some path popped the bottom
// frame. For a matcher whose bottom frame is the grammar's root that means
// "the grammar may end here"; for a walk that starts from a lone frame (the
// mask cache) it means "the frame ended, what follows depends on the caller".
//
// Not thread-safe; holds scratch buffers, one per matcher or walk.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/stack_pool.h"

namespace strata {

struct StackSet {
  std::vector<int32_t> stacks;
  bool bottom_popped = false;

  bool is_dead() const { return stacks.empty() && !bottom_popped; }
  void clear() {
    stacks.clear();
    bottom_popped = false;
  }
};

class PdaStepper {
 public:
  PdaStepper(const CompiledGrammar& grammar, StackPool* pool) : g_(grammar), pool_(pool) {}

  // out = closure of the stack with `pos` on top of `parent`.
  void start(int32_t pos, int32_t parent, StackSet* out);
  // out = closure of every stack of `in` after reading byte b.
  void advance(const StackSet& in, uint8_t b, StackSet* out);
  // Same for one stack of a set.
  void advance_one(int32_t stack, uint8_t b, StackSet* out);

  StackPool* pool() { return pool_; }
  const CompiledGrammar& grammar() const { return g_; }

 private:
  void begin(StackSet* out);
  void close(int32_t stack, StackSet* out);
  void step_stack(int32_t stack, uint8_t b, StackSet* out);

  const CompiledGrammar& g_;
  StackPool* pool_;
  std::vector<uint32_t> mark_;  // mark_[stack] == epoch_: already closed this step
  uint32_t epoch_ = 0;
  std::vector<int32_t> work_;
};

// Interned stack sets with a memoized byte transition table, for trie
// walks: they revisit the same few sets (inside a string every character
// leads back to the loop), so most steps become one table lookup. The pool
// must not be truncated below what the memo has seen while it is in use.
class StackSetMemo {
 public:
  explicit StackSetMemo(PdaStepper* stepper) : stepper_(stepper) {}

  int32_t intern(StackSet s);
  int32_t next(int32_t id, uint8_t b) {
    const int32_t t = trans_[static_cast<size_t>(id) * 256 + b];
    return t != kUnknown ? t : step(id, b);
  }
  // Whether reading any byte of `bytes` (256 bits) from set `id` leads
  // back to `id` itself (so a whole trie subtree over those bytes is
  // accepted). Memoized per set and byte.
  bool loops_on_all(int32_t id, const uint64_t* bytes);
  const StackSet& set(int32_t id) const { return sets_[id]; }
  bool is_dead(int32_t id) const { return sets_[id].is_dead(); }
  bool bottom_popped(int32_t id) const { return sets_[id].bottom_popped; }
  void clear();

 private:
  static constexpr int32_t kUnknown = -1;
  int32_t step(int32_t id, uint8_t b);

  PdaStepper* stepper_;
  std::vector<StackSet> sets_;
  std::vector<int32_t> trans_;  // [set][byte]
  struct Loops {
    uint64_t yes[4] = {0, 0, 0, 0}, no[4] = {0, 0, 0, 0};
  };
  std::vector<Loops> loops_;  // [set]: bytes known to loop / not
  std::unordered_map<std::string, int32_t> ids_;
  StackSet scratch_;
};

}  // namespace strata
