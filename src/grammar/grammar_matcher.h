// GrammarMatcher: one generation's position in a grammar, over token ids.
//
// Holds the set of pushdown stacks reachable after the tokens accepted so
// far (a history of them, for rollback) and answers, for the next step, the
// allowed-token bitmask: bit id set <=> token id keeps the output a prefix
// of some sentence of the grammar. End-of-generation tokens are allowed only
// when the grammar can terminate here; accepting one terminates the matcher.
// Special tokens are never allowed.
//
// fill_next_token_bitmask() ORs each stack's precomputed mask
// (TokenMaskCache) and checks only the uncertain subtrees against the real
// stack, so the cost tracks the grammar's ambiguity, not the vocabulary.
//
// One matcher per sequence; not thread-safe. The cache it points to is
// shared and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/pda_stepper.h"
#include "grammar/token_mask_cache.h"

namespace strata {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const TokenMaskCache> cache);

  // Accepts token `id` (false, and nothing changes, when the grammar forbids
  // it). An end-of-generation token is accepted iff can_terminate().
  bool accept_token(int32_t id);
  // Accepts raw bytes as one history entry (jump-forward text); false and
  // unchanged when they leave the grammar.
  bool accept_bytes(std::string_view bytes);
  // Undoes the last `n` accept_token/accept_bytes calls; false when fewer
  // than n were made (then nothing changes).
  bool rollback(int32_t n);
  void reset();

  // The grammar may end after the output so far.
  bool can_terminate() const { return current().bottom_popped && !terminated(); }
  // An end-of-generation token was accepted, or the grammar has ended and
  // nothing can follow (the sequence should stop).
  bool is_terminated() const {
    return terminated() || (current().bottom_popped && current().stacks.empty());
  }
  int32_t num_history() const { return static_cast<int32_t>(history_.size()) - 1; }

  // mask must have trie().mask_words() words.
  void fill_next_token_bitmask(std::span<uint64_t> mask);
  // The longest byte string the grammar forces from here (exactly one
  // continuation byte at each step, and ending not allowed), at most
  // max_bytes. Does not change the state.
  std::string find_jump_forward_bytes(size_t max_bytes = 256);

  const TokenMaskCache& cache() const { return *cache_; }
  const std::shared_ptr<const TokenMaskCache>& cache_ptr() const { return cache_; }

 private:
  struct Entry {
    StackSet set;
    int32_t pool_size = 0;
    bool eos = false;
  };
  const StackSet& current() const { return history_.back().set; }
  bool terminated() const { return history_.back().eos; }
  bool advance_bytes(std::string_view bytes, StackSet* out);
  void walk_uncertain(int32_t stack, const std::vector<int32_t>& nodes, std::span<uint64_t> mask);

  std::shared_ptr<const TokenMaskCache> cache_;
  StackPool pool_;
  PdaStepper stepper_;
  std::vector<Entry> history_;
  // Scratch for uncertain-subtree walks: memoized set transitions and one
  // interned set per trie depth along the current path.
  StackSetMemo memo_;
  std::vector<int32_t> level_set_, level_node_, chain_;
};

}  // namespace strata
