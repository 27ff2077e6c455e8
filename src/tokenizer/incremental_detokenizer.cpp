// Streaming decode with UTF-8 hold-back.
#include "tokenizer/incremental_detokenizer.h"

namespace strata {

std::string IncrementalDetokenizer::push(int32_t id) {
  std::string_view piece = tokenizer_.decode_piece(id, skip_special_, &scratch_);
  if (piece.empty()) return {};
  if (!has_output_) {
    has_output_ = true;
    if (tokenizer_.strips_leading_space() && piece[0] == ' ') piece.remove_prefix(1);
  }
  pending_.append(piece);
  std::string out;
  const size_t consumed = unicode::append_utf8_lossy(pending_, /*is_final=*/false, &out);
  pending_.erase(0, consumed);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  std::string out;
  unicode::append_utf8_lossy(pending_, /*is_final=*/true, &out);
  pending_.clear();
  has_output_ = false;
  return out;
}

}  // namespace strata
