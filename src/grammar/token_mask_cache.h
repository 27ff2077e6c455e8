// TokenMaskCache: a compiled grammar bound to a vocabulary, with each
// position's context-independent token mask (xgrammar's idea, computed by
// walking the token trie as llguidance does).
//
// For a position p, walk the trie from a stack holding p alone. A token the
// walk consumes entirely without leaving p's rule frame is accepted whatever
// lies below p; one rejected before the frame could end is rejected; the rest
// (the frame ended part-way, so the caller's continuation decides) are
// "uncertain" and kept as trie subtrees that the matcher checks against its
// real stack. In the root rule, leaving the frame means the grammar ended, so
// nothing there is uncertain. Inlining small rules into callers keeps the
// uncertain sets small.
//
// Positions are filled lazily on first use (or all at once by
// precompute_all()); get() is thread-safe, results are immutable once made.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "grammar/compiled_grammar.h"
#include "grammar/token_trie.h"

namespace strata {

struct PositionMask {
  // Accepted tokens: a bitmask over the vocabulary, or (when few) a list.
  std::vector<uint64_t> accepted_bits;
  std::vector<int32_t> accepted_ids;
  // Trie nodes whose subtrees need the real stack.
  std::vector<int32_t> uncertain_nodes;
};

class TokenMaskCache {
 public:
  TokenMaskCache(std::shared_ptr<const CompiledGrammar> grammar,
                 std::shared_ptr<const TokenTrie> trie);

  const CompiledGrammar& grammar() const { return *grammar_; }
  const TokenTrie& trie() const { return *trie_; }
  const std::shared_ptr<const CompiledGrammar>& grammar_ptr() const { return grammar_; }
  const std::shared_ptr<const TokenTrie>& trie_ptr() const { return trie_; }
  int32_t max_token_depth() const { return max_depth_; }

  const PositionMask& get(int32_t pos) const;
  // Fills every position that can be a stack top.
  void precompute_all() const;

 private:
  PositionMask compute(int32_t pos) const;

  std::shared_ptr<const CompiledGrammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  int32_t max_depth_ = 0;
  mutable std::unique_ptr<std::once_flag[]> once_;
  mutable std::vector<std::unique_ptr<PositionMask>> masks_;
};

}  // namespace strata
