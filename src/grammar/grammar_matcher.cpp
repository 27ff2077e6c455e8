#include "grammar/grammar_matcher.h"

#include <algorithm>

namespace strata {

namespace {

inline void set_bit(std::span<uint64_t> mask, int32_t id) {
  mask[id >> 6] |= uint64_t{1} << (id & 63);
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const TokenMaskCache> cache)
    : cache_(std::move(cache)), stepper_(cache_->grammar(), &pool_), memo_(&stepper_) {
  const size_t levels = static_cast<size_t>(cache_->max_token_depth()) + 1;
  level_set_.resize(levels);
  level_node_.resize(levels);
  reset();
}

void GrammarMatcher::reset() {
  pool_.clear();
  history_.clear();
  Entry e;
  stepper_.start(cache_->grammar().root_start(), -1, &e.set);
  e.pool_size = pool_.size();
  history_.push_back(std::move(e));
}

bool GrammarMatcher::advance_bytes(std::string_view bytes, StackSet* out) {
  StackSet a = current(), b;
  for (unsigned char c : bytes) {
    stepper_.advance(a, c, &b);
    if (b.is_dead()) return false;
    std::swap(a, b);
  }
  *out = std::move(a);
  return true;
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
  if (terminated()) return false;
  const int32_t mark = pool_.size();
  Entry e;
  if (!advance_bytes(bytes, &e.set)) {
    pool_.truncate(mark);
    return false;
  }
  e.pool_size = pool_.size();
  history_.push_back(std::move(e));
  return true;
}

bool GrammarMatcher::accept_token(int32_t id) {
  const TokenTrie& trie = cache_->trie();
  if (id < 0 || id >= trie.vocab_size() || terminated()) return false;
  const auto& eog = trie.eog_ids();
  if (std::find(eog.begin(), eog.end(), id) != eog.end()) {
    if (!current().bottom_popped) return false;
    Entry e;
    e.set = current();
    e.pool_size = pool_.size();
    e.eos = true;
    history_.push_back(std::move(e));
    return true;
  }
  if (!trie.is_matchable(id)) return false;
  return accept_bytes(trie.token_bytes(id));
}

bool GrammarMatcher::rollback(int32_t n) {
  if (n < 0 || n > num_history()) return false;
  history_.resize(history_.size() - n);
  pool_.truncate(history_.back().pool_size);
  return true;
}

void GrammarMatcher::walk_uncertain(int32_t stack, const std::vector<int32_t>& nodes,
                                    std::span<uint64_t> mask) {
  const TokenTrie& trie = cache_->trie();
  StackSet first;
  first.stacks.assign(1, stack);
  level_set_[0] = memo_.intern(std::move(first));
  level_node_[0] = 0;
  int32_t valid = 0;  // level_set_[0..valid] hold the path to level_node_[valid]
  auto step_to = [&](int32_t node) {
    const TokenTrie::Node& nd = trie.node(node);
    const int32_t d = nd.depth;
    level_set_[d] = memo_.next(level_set_[d - 1], nd.byte);
    level_node_[d] = node;
    valid = d;
    return !memo_.is_dead(level_set_[d]);
  };
  for (int32_t u : nodes) {
    // Climb from u to the deepest node of the current path, then step down.
    chain_.clear();
    int32_t a = u;
    while (true) {
      const int32_t da = trie.node(a).depth;
      if (da <= valid && level_node_[da] == a) break;
      chain_.push_back(a);
      a = trie.node(a).parent;
    }
    if (memo_.is_dead(level_set_[trie.node(a).depth])) continue;
    bool alive = true;
    for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) {
      if (!step_to(*it)) {
        alive = false;
        break;
      }
    }
    if (!alive) continue;
    // level_set_[depth(u)] is u's state: walk u's subtree.
    const int32_t end = trie.node(u).subtree_end;
    for (int32_t i = u; i < end;) {
      if (i != u && !step_to(i)) {
        i = trie.node(i).subtree_end;
        continue;
      }
      const int32_t d = trie.node(i).depth;
      if (trie.node(i).subtree_end > i + 1 &&
          memo_.loops_on_all(level_set_[d], trie.bytes_below(i))) {
        for (int32_t id : trie.subtree_tokens(i)) set_bit(mask, id);
        i = trie.node(i).subtree_end;
        continue;
      }
      for (int32_t id : trie.tokens_at(i)) set_bit(mask, id);
      ++i;
    }
  }
}

void GrammarMatcher::fill_next_token_bitmask(std::span<uint64_t> mask) {
  std::fill(mask.begin(), mask.end(), 0);
  if (terminated()) return;
  const StackSet set = current();
  for (int32_t s : set.stacks) {
    const PositionMask& pm = cache_->get(pool_.frame(s).pos);
    if (!pm.accepted_bits.empty()) {
      const uint64_t* src = pm.accepted_bits.data();
      for (size_t w = 0; w < mask.size(); ++w) mask[w] |= src[w];
    } else {
      for (int32_t id : pm.accepted_ids) set_bit(mask, id);
    }
  }
  const int32_t base = pool_.size();
  for (int32_t s : set.stacks) {
    const PositionMask& pm = cache_->get(pool_.frame(s).pos);
    if (!pm.uncertain_nodes.empty()) walk_uncertain(s, pm.uncertain_nodes, mask);
  }
  memo_.clear();
  pool_.truncate(base);
  if (set.bottom_popped) {
    for (int32_t id : cache_->trie().eog_ids()) set_bit(mask, id);
  }
}

std::string GrammarMatcher::find_jump_forward_bytes(size_t max_bytes) {
  std::string out;
  if (terminated()) return out;
  const CompiledGrammar& g = cache_->grammar();
  const int32_t mark = pool_.size();
  StackSet a = current(), b;
  while (out.size() < max_bytes && !a.bottom_popped && !a.stacks.empty()) {
    int lo = 256, hi = -1;
    bool single = true;
    for (int32_t s : a.stacks) {
      const int32_t pos = pool_.frame(s).pos;
      for (const auto* e = g.byte_begin(pos); e != g.byte_end(pos); ++e) {
        if (e->lo != e->hi || (hi >= 0 && e->lo != lo)) single = false;
        lo = std::min<int>(lo, e->lo);
        hi = std::max<int>(hi, e->hi);
      }
      if (!single) break;
    }
    if (!single || lo != hi) break;
    stepper_.advance(a, static_cast<uint8_t>(lo), &b);
    if (b.is_dead()) break;
    out.push_back(static_cast<char>(lo));
    std::swap(a, b);
  }
  pool_.truncate(mark);
  return out;
}

}  // namespace strata
