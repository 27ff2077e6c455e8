#include "spec/suffix_drafter.h"

#include <algorithm>

namespace strata {

SuffixDrafter::Trie::Trie(int32_t max_depth) : max_depth_(max_depth), nodes_(1) {}

void SuffixDrafter::Trie::begin_sequence() {
  active_.clear();
}

int32_t SuffixDrafter::Trie::child(int32_t node, int32_t token) const {
  if (nodes_[static_cast<size_t>(node)].num_children > kListChildren) {
    const auto it = wide_children_.find(edge_key(node, token));
    return it == wide_children_.end() ? -1 : it->second;
  }
  for (int32_t c = nodes_[static_cast<size_t>(node)].first_child; c >= 0;
       c = nodes_[static_cast<size_t>(c)].next_sibling) {
    if (nodes_[static_cast<size_t>(c)].token == token) return c;
  }
  return -1;
}

int32_t SuffixDrafter::Trie::find(std::span<const int32_t> path) const {
  int32_t node = 0;
  for (size_t i = 0; i < path.size() && node >= 0; ++i) node = child(node, path[i]);
  return node;
}

void SuffixDrafter::Trie::append(int32_t token) {
  // Every live suffix (started at one of the last max_depth - 1 tokens) and
  // a new one at the root grow by `token`; the deepest drops out.
  active_.insert(active_.begin(), 0);
  if (static_cast<int32_t>(active_.size()) > max_depth_) active_.pop_back();
  for (int32_t& node : active_) {
    int32_t next = child(node, token);
    if (next < 0) {
      next = static_cast<int32_t>(nodes_.size());
      Node fresh;
      fresh.token = token;
      fresh.next_sibling = nodes_[static_cast<size_t>(node)].first_child;
      nodes_.push_back(fresh);
      Node& parent = nodes_[static_cast<size_t>(node)];
      parent.first_child = next;
      if (++parent.num_children == kListChildren + 1) {
        for (int32_t c = next; c >= 0; c = nodes_[static_cast<size_t>(c)].next_sibling) {
          wide_children_.emplace(edge_key(node, nodes_[static_cast<size_t>(c)].token), c);
        }
      } else if (parent.num_children > kListChildren) {
        wide_children_.emplace(edge_key(node, token), next);
      }
    }
    ++nodes_[static_cast<size_t>(node)].continuations;
    ++nodes_[static_cast<size_t>(next)].count;
    node = next;
  }
}

template <typename NodeOf>
int32_t SuffixDrafter::Trie::longest_continued(int32_t longest, NodeOf node_of,
                                               int32_t* node) const {
  // The longest suffix (of length <= longest) that is a path with a
  // continuation. That property is monotone in the length: every suffix of
  // a stored path is stored (each start position's suffixes are), with the
  // same continuation, so a binary search over the length finds it.
  int32_t lo = 0, hi = longest;  // lengths <= lo are continued; > hi are not
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    const int32_t n = node_of(mid);
    if (n >= 0 && nodes_[static_cast<size_t>(n)].continuations > 0) {
      lo = mid;
      *node = n;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

int32_t SuffixDrafter::Trie::propose(std::span<const int32_t> context, int32_t max_drafts,
                                     const SuffixDrafterOptions& options,
                                     std::vector<int32_t>* out) const {
  const int32_t longest = std::min<int32_t>(max_depth_ - 1, static_cast<int32_t>(context.size()));
  int32_t node = -1;
  const int32_t match = longest_continued(
      longest, [&](int32_t m) { return find(context.last(static_cast<size_t>(m))); }, &node);
  if (match > 0) walk(node, match, max_drafts, options, out);
  return match;
}

int32_t SuffixDrafter::Trie::propose_current(int32_t max_drafts,
                                             const SuffixDrafterOptions& options,
                                             std::vector<int32_t>* out) const {
  // The current sequence's suffixes are the live nodes: active_[m - 1] has
  // length m, so no path is walked from the root.
  const int32_t longest = std::min<int32_t>(max_depth_ - 1, static_cast<int32_t>(active_.size()));
  int32_t node = -1;
  const int32_t match = longest_continued(
      longest, [&](int32_t m) { return active_[static_cast<size_t>(m - 1)]; }, &node);
  if (match > 0) walk(node, match, max_drafts, options, out);
  return match;
}

void SuffixDrafter::Trie::walk(int32_t node, int32_t match, int32_t max_drafts,
                               const SuffixDrafterOptions& options,
                               std::vector<int32_t>* out) const {
  const int32_t limit = std::min<int32_t>(
      max_drafts, std::max<int32_t>(1, static_cast<int32_t>(options.max_spec_factor * match)));
  double prob = 1.0;
  for (int32_t d = 0; d < limit; ++d) {
    const Node& n = nodes_[static_cast<size_t>(node)];
    if (n.continuations == 0) break;
    int32_t best_token = -1, best_node = -1;
    int32_t best_count = 0;
    for (int32_t idx = n.first_child; idx >= 0;
         idx = nodes_[static_cast<size_t>(idx)].next_sibling) {
      const Node& child_node = nodes_[static_cast<size_t>(idx)];
      const int32_t c = child_node.count;
      if (c > best_count || (c == best_count && child_node.token < best_token)) {
        best_count = c;
        best_token = child_node.token;
        best_node = idx;
      }
    }
    prob *= static_cast<double>(best_count) / static_cast<double>(n.continuations);
    if (prob < options.min_token_prob) break;
    out->push_back(best_token);
    node = best_node;
  }
}

SuffixDrafter::SuffixDrafter(const SuffixDrafterOptions& options)
    : options_(options), global_(options.max_tree_depth) {}

SuffixDrafter::~SuffixDrafter() = default;

int32_t SuffixDrafter::propose(uint64_t request_id, std::span<const int32_t> tokens,
                               int64_t /*num_prompt_tokens*/, int32_t max_drafts,
                               std::vector<int32_t>* out) {
  auto& slot = requests_[request_id];
  if (!slot) {
    slot = std::make_unique<RequestTrie>(RequestTrie{Trie(options_.max_tree_depth), 0});
    slot->trie.begin_sequence();
  }
  // Catch up with the tokens appended since the last proposal (the last
  // token too: its own path has no continuation yet, so it never matches
  // itself).
  for (int64_t i = slot->num_inserted; i < std::ssize(tokens); ++i) slot->trie.append(tokens[i]);
  slot->num_inserted = std::ssize(tokens);

  mine_.clear();
  theirs_.clear();
  const int32_t m1 = slot->trie.propose_current(max_drafts, options_, &mine_);
  const int32_t m2 = global_.propose(tokens, max_drafts, options_, &theirs_);
  const bool take_global =
      theirs_.size() > mine_.size() || (theirs_.size() == mine_.size() && m2 > m1);
  const std::vector<int32_t>& pick = take_global ? theirs_ : mine_;
  out->insert(out->end(), pick.begin(), pick.end());
  return pick.empty() ? 0 : take_global ? m2 : m1;
}

void SuffixDrafter::finish(uint64_t request_id, std::span<const int32_t> tokens,
                           int64_t num_prompt_tokens) {
  requests_.erase(request_id);
  if (options_.max_cached_requests <= 0 || std::ssize(tokens) <= num_prompt_tokens) return;
  cached_outputs_.emplace_back(tokens.begin() + num_prompt_tokens, tokens.end());
  if (std::ssize(cached_outputs_) > options_.max_cached_requests) {
    // Rebuild from the outputs still remembered (amortized: every
    // max_cached_requests / 2 finishes).
    while (std::ssize(cached_outputs_) > options_.max_cached_requests / 2) {
      cached_outputs_.pop_front();
    }
    global_ = Trie(options_.max_tree_depth);
    for (const auto& o : cached_outputs_) {
      global_.begin_sequence();
      for (int32_t t : o) global_.append(t);
    }
    return;
  }
  global_.begin_sequence();
  for (int32_t t : cached_outputs_.back()) global_.append(t);
}

}  // namespace strata
