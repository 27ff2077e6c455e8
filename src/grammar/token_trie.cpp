#include "grammar/token_trie.h"

#include <algorithm>
#include <numeric>

#include "tokenizer/tokenizer.h"

namespace strata {

TokenTrie::TokenTrie(std::vector<std::string> token_bytes, const std::vector<int32_t>& excluded,
                     std::vector<int32_t> eog_ids)
    : token_bytes_(std::move(token_bytes)), eog_ids_(std::move(eog_ids)) {
  const int32_t n = vocab_size();
  matchable_.assign(n, true);
  for (int32_t id : excluded)
    if (id >= 0 && id < n) matchable_[id] = false;
  for (int32_t id = 0; id < n; ++id) {
    // Depth is a uint16_t; nothing real comes near 64 KiB per token.
    if (token_bytes_[id].empty() || token_bytes_[id].size() > 60000) matchable_[id] = false;
  }
  std::vector<int32_t> order;
  for (int32_t id = 0; id < n; ++id)
    if (matchable_[id]) order.push_back(id);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return token_bytes_[a] < token_bytes_[b]; });

  nodes_.push_back(Node{});
  std::vector<int32_t> path = {0};  // path[d] = node at depth d
  const std::string* prev = nullptr;
  auto close_node = [&](int32_t i) { nodes_[i].subtree_end = static_cast<int32_t>(nodes_.size()); };
  for (int32_t id : order) {
    const std::string& s = token_bytes_[id];
    size_t lcp = 0;
    if (prev) {
      while (lcp < s.size() && lcp < prev->size() && s[lcp] == (*prev)[lcp]) ++lcp;
    }
    while (path.size() > lcp + 1) {
      close_node(path.back());
      path.pop_back();
    }
    for (size_t d = lcp; d < s.size(); ++d) {
      Node nd;
      nd.parent = path.back();
      nd.depth = static_cast<uint16_t>(d + 1);
      nd.byte = static_cast<uint8_t>(s[d]);
      nd.token_begin = nd.token_end = 0;
      nodes_.push_back(nd);
      path.push_back(static_cast<int32_t>(nodes_.size() - 1));
    }
    prev = &s;
  }
  while (!path.empty()) {
    close_node(path.back());
    path.pop_back();
  }
  // Attach tokens: walk again; sorted order visits nodes in DFS order.
  std::vector<std::vector<int32_t>> at(nodes_.size());
  {
    int32_t cur = 0;
    prev = nullptr;
    std::vector<int32_t> p = {0};
    for (int32_t id : order) {
      const std::string& s = token_bytes_[id];
      size_t lcp = 0;
      if (prev) {
        while (lcp < s.size() && lcp < prev->size() && s[lcp] == (*prev)[lcp]) ++lcp;
      }
      p.resize(lcp + 1);
      for (size_t d = lcp; d < s.size(); ++d) {
        // The next node in DFS order below p.back() with this byte: children
        // are contiguous after the parent, scan them.
        int32_t c = p.back() + 1;
        while (nodes_[c].byte != static_cast<uint8_t>(s[d]) || nodes_[c].parent != p.back())
          c = nodes_[c].subtree_end;
        p.push_back(c);
      }
      cur = p.back();
      at[cur].push_back(id);
      prev = &s;
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    nodes_[i].token_begin = static_cast<int32_t>(token_ids_.size());
    token_ids_.insert(token_ids_.end(), at[i].begin(), at[i].end());
    nodes_[i].token_end = static_cast<int32_t>(token_ids_.size());
  }
  bytes_below_.assign(nodes_.size() * 4, 0);
  for (size_t i = nodes_.size() - 1; i > 0; --i) {
    uint64_t* p = bytes_below_.data() + 4 * static_cast<size_t>(nodes_[i].parent);
    const uint64_t* c = bytes_below_.data() + 4 * i;
    for (int w = 0; w < 4; ++w) p[w] |= c[w];
    p[nodes_[i].byte >> 6] |= uint64_t{1} << (nodes_[i].byte & 63);
  }
}

std::shared_ptr<const TokenTrie> TokenTrie::from_tokenizer(const Tokenizer& tokenizer) {
  const int32_t n = tokenizer.vocab_size();
  std::vector<std::string> bytes(n);
  std::vector<int32_t> excluded, eog;
  for (int32_t id = 0; id < n; ++id) {
    bytes[id] = tokenizer.token_to_piece(id);
    if (tokenizer.is_special(id)) excluded.push_back(id);
    if (tokenizer.is_eog(id)) {
      eog.push_back(id);
      excluded.push_back(id);
    }
  }
  return std::make_shared<const TokenTrie>(std::move(bytes), excluded, std::move(eog));
}

std::vector<int32_t> TokenTrie::greedy_tokenize(std::string_view bytes) const {
  std::vector<int32_t> out;
  size_t pos = 0;
  while (pos < bytes.size()) {
    int32_t node = 0, best = -1;
    size_t best_len = 0;
    for (size_t d = 0; pos + d < bytes.size(); ++d) {
      // Children of `node` are contiguous after it; find the byte.
      int32_t c = node + 1, found = -1;
      const int32_t end = nodes_[node].subtree_end;
      while (c < end) {
        if (nodes_[c].byte == static_cast<uint8_t>(bytes[pos + d])) {
          found = c;
          break;
        }
        c = nodes_[c].subtree_end;
      }
      if (found < 0) break;
      node = found;
      const auto ids = tokens_at(node);
      if (!ids.empty()) {
        best = *std::min_element(ids.begin(), ids.end());
        best_len = d + 1;
      }
    }
    if (best < 0) return {};
    out.push_back(best);
    pos += best_len;
  }
  return out;
}

}  // namespace strata
