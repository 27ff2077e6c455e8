#include "grammar/token_mask_cache.h"

#include <algorithm>

#include "grammar/pda_stepper.h"

namespace strata {

TokenMaskCache::TokenMaskCache(std::shared_ptr<const CompiledGrammar> grammar,
                               std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)) {
  for (int32_t i = 0; i < trie_->num_nodes(); ++i)
    max_depth_ = std::max<int32_t>(max_depth_, trie_->node(i).depth);
  once_ = std::make_unique<std::once_flag[]>(grammar_->num_positions());
  masks_.resize(grammar_->num_positions());
}

const PositionMask& TokenMaskCache::get(int32_t pos) const {
  std::call_once(once_[pos], [&] { masks_[pos] = std::make_unique<PositionMask>(compute(pos)); });
  return *masks_[pos];
}

void TokenMaskCache::precompute_all() const {
  for (int32_t p = 0; p < grammar_->num_positions(); ++p)
    if (grammar_->has_byte_edges(p)) get(p);
}

PositionMask TokenMaskCache::compute(int32_t pos) const {
  const TokenTrie& trie = *trie_;
  StackPool pool;
  PdaStepper stepper(*grammar_, &pool);
  StackSetMemo sets(&stepper);
  const bool in_root = grammar_->node(pos).rule == grammar_->root_rule();
  const size_t levels = static_cast<size_t>(max_depth_) + 1;
  std::vector<int32_t> state(levels);
  std::vector<uint8_t> ended(levels);  // the frame ended before this depth
  StackSet first;
  stepper.start(pos, -1, &first);
  state[0] = sets.intern(std::move(first));
  ended[0] = 0;

  PositionMask out;
  std::vector<int32_t> accepted;
  for (int32_t i = 1; i < trie.num_nodes();) {
    const TokenTrie::Node& nd = trie.node(i);
    const int32_t d = nd.depth;
    state[d] = sets.next(state[d - 1], nd.byte);
    ended[d] = ended[d - 1] || sets.bottom_popped(state[d - 1]);
    if (sets.is_dead(state[d])) {
      if (ended[d] && !in_root) out.uncertain_nodes.push_back(i);
      i = nd.subtree_end;
      continue;
    }
    if (nd.subtree_end > i + 1 && sets.loops_on_all(state[d], trie.bytes_below(i))) {
      // Every descendant is reached in this same live set: all accepted.
      for (int32_t id : trie.subtree_tokens(i)) accepted.push_back(id);
      i = nd.subtree_end;
      continue;
    }
    for (int32_t id : trie.tokens_at(i)) accepted.push_back(id);
    ++i;
  }
  if (static_cast<int64_t>(accepted.size()) * 32 < trie.vocab_size()) {
    std::sort(accepted.begin(), accepted.end());
    out.accepted_ids = std::move(accepted);
  } else {
    out.accepted_bits.assign(trie.mask_words(), 0);
    for (int32_t id : accepted) out.accepted_bits[id >> 6] |= uint64_t{1} << (id & 63);
  }
  return out;
}

}  // namespace strata
