// IncrementalDetokenizer: streams the text of a growing token sequence.
//
// push(id) returns the text that became complete with this token; it never
// returns half a UTF-8 code point (an incomplete trailing sequence is held
// back until the bytes that finish it arrive). flush() returns what is held
// back, invalid bytes as U+FFFD. The concatenation of every push() and the
// final flush() equals tokenizer.decode(all ids, skip_special), including
// SentencePiece's "drop one leading space" rule.
//
// Borrows the Tokenizer (it must outlive this object). Not thread-safe: one
// per stream.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace strata {

class IncrementalDetokenizer {
 public:
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = true)
      : tokenizer_(tokenizer), skip_special_(skip_special) {}

  // Text completed by token `id` (possibly empty). Out-of-range ids add nothing.
  std::string push(int32_t id);
  // The held-back bytes, U+FFFD for each invalid part; resets the stream.
  std::string flush();

  // Bytes held back waiting for the rest of a code point (at most 3).
  size_t num_pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  bool has_output_ = false;  // any byte seen: the leading-space rule is spent
  std::string pending_;
  std::string scratch_;
};

}  // namespace strata
