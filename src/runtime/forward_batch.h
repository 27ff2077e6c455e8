// ForwardBatch: one step's worth of tokens for ModelRunner::forward, flat.
//
// Token t (0 <= t < num_tokens()) is tokens[t] of sequence seq_index[t] at
// position positions[t]; its K/V is written to slot_mapping[t]
// (= physical block * block_size + offset). Sequence s attends through
// block_tables[s] (logical block i -> physical block id). A batch may mix
// prefill chunks of several sequences and single decode tokens; within a
// sequence, tokens must come in increasing position order and every position
// below a token's own must already be in the cache or earlier in the batch.
// logits_indices lists the batch rows whose logits are wanted, in output
// order. A plain value built by the caller; the runner only reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata {

struct ForwardBatch {
  std::vector<int32_t> tokens;                     // [n]
  std::vector<int32_t> positions;                  // [n]
  std::vector<int32_t> seq_index;                  // [n] index into block_tables
  std::vector<int32_t> slot_mapping;               // [n]
  std::vector<std::vector<int32_t>> block_tables;  // [n_seqs][num logical blocks]
  std::vector<int32_t> logits_indices;             // rows of the batch that produce logits

  int64_t num_tokens() const { return static_cast<int64_t>(tokens.size()); }

  // Appends one token of sequence `seq` at `position`, deriving its slot
  // from block_tables[seq] (set the tables first).
  void add_token(int32_t token, int32_t position, int32_t seq, int block_size, bool wants_logits) {
    // A position the table does not cover gets slot -1, which forward()
    // rejects.
    const std::vector<int32_t>* table =
        seq >= 0 && seq < static_cast<int32_t>(block_tables.size()) ? &block_tables[seq] : nullptr;
    const size_t logical = position >= 0 ? static_cast<size_t>(position / block_size) : SIZE_MAX;
    const bool is_covered = table != nullptr && logical < table->size();
    tokens.push_back(token);
    positions.push_back(position);
    seq_index.push_back(seq);
    slot_mapping.push_back(is_covered ? (*table)[logical] * block_size + position % block_size
                                      : -1);
    if (wants_logits) logits_indices.push_back(static_cast<int32_t>(tokens.size() - 1));
  }
};

}  // namespace strata
