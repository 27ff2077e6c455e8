// BpeMerges: a BPE merge table (pair of token ids -> rank and merged id) and
// the merge loop that applies it to one pre-tokenized word.
//
// Lower rank merges first; among equal ranks the leftmost pair merges first,
// which is both Hugging Face's BPE order (rank = position in `merges`) and
// SentencePiece BPE's (rank = order of the merged piece's score, equal scores
// sharing a rank). Immutable after building; apply() is const and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace strata {

class BpeMerges {
 public:
  // Registers left+right -> result at `rank`; a repeated pair keeps the last
  // registration (as Hugging Face's map from the merges list does).
  void add(int32_t left_id, int32_t right_id, int32_t rank, int32_t result_id);
  size_t size() const { return table_.size(); }

  // Merges `symbols` (token ids of one word, in order) in place until no
  // adjacent pair has a merge. O(n log n) in the number of symbols.
  void apply(std::vector<int32_t>* symbols) const;

 private:
  struct Entry {
    int32_t rank;
    int32_t result_id;
  };
  static uint64_t key(int32_t l, int32_t r) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
  }
  const Entry* find(int32_t l, int32_t r) const {
    auto it = table_.find(key(l, r));
    return it == table_.end() ? nullptr : &it->second;
  }
  std::unordered_map<uint64_t, Entry> table_;
};

}  // namespace strata
