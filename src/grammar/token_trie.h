// TokenTrie: the vocabulary's token byte strings as a trie laid out in
// depth-first order, built once per vocabulary and shared by every grammar.
//
// Node i's subtree is the index range [i, subtree_end(i)), so a walk that
// finds a prefix impossible skips the whole subtree with one jump. Node 0 is
// the root (the empty prefix). Tokens with no bytes, and special/control
// tokens (whose text is not what the model "writes"), are left out: a grammar
// never allows them; end-of-generation tokens are allowed separately when the
// grammar can terminate.
//
// Immutable after construction; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata {

class Tokenizer;

class TokenTrie {
 public:
  struct Node {
    int32_t parent = -1;
    int32_t subtree_end = 0;
    int32_t token_begin = 0, token_end = 0;  // into token_ids()
    uint16_t depth = 0;
    uint8_t byte = 0;  // the edge from the parent
  };

  // token_bytes[id] = the bytes token id emits; ids in `excluded` and empty
  // strings are left out; eog_ids are the end-of-generation tokens.
  TokenTrie(std::vector<std::string> token_bytes, const std::vector<int32_t>& excluded,
            std::vector<int32_t> eog_ids);
  // From strata's tokenizer: token_to_piece() for every id; control and
  // unknown tokens excluded; eog = is_eog().
  static std::shared_ptr<const TokenTrie> from_tokenizer(const Tokenizer& tokenizer);

  int32_t vocab_size() const { return static_cast<int32_t>(token_bytes_.size()); }
  int32_t num_nodes() const { return static_cast<int32_t>(nodes_.size()); }
  const Node& node(int32_t i) const { return nodes_[i]; }
  std::span<const int32_t> tokens_at(int32_t i) const {
    return {token_ids_.data() + nodes_[i].token_begin,
            static_cast<size_t>(nodes_[i].token_end - nodes_[i].token_begin)};
  }
  // Every token of node i's subtree (node i included), in DFS order.
  std::span<const int32_t> subtree_tokens(int32_t i) const {
    const int32_t last = nodes_[i].subtree_end - 1;
    return {token_ids_.data() + nodes_[i].token_begin,
            static_cast<size_t>(nodes_[last].token_end - nodes_[i].token_begin)};
  }
  // The bytes on the edges below node i (256 bits): a walk whose state
  // loops on all of them accepts the whole subtree without visiting it.
  const uint64_t* bytes_below(int32_t i) const { return bytes_below_.data() + 4 * size_t(i); }
  const std::string& token_bytes(int32_t id) const { return token_bytes_[id]; }
  // Whether the id is in the trie (a grammar may allow it).
  bool is_matchable(int32_t id) const { return matchable_[id]; }
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }
  // Longest-match tokenization of `bytes` over the trie's tokens (the
  // lowest id among equal pieces); empty when some byte has no token. For
  // jump-forward text when the tokenizer's own encoding does not spell the
  // bytes exactly (a SentencePiece space prefix).
  std::vector<int32_t> greedy_tokenize(std::string_view bytes) const;
  // Words of a bitmask over this vocabulary.
  int32_t mask_words() const { return (vocab_size() + 63) / 64; }

 private:
  std::vector<std::string> token_bytes_;
  std::vector<bool> matchable_;
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
  std::vector<uint64_t> bytes_below_;  // [node][4]
  std::vector<int32_t> eog_ids_;
};

}  // namespace strata
