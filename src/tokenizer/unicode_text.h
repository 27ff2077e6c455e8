// Small UTF-8 helpers for the tokenizer: lossy validation (U+FFFD for invalid
// bytes, incremental-friendly), NFC normalization (ICU), and the GPT-2
// byte-level alphabet. Stateless free functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace strata::unicode {

// Appends `bytes` to `out` as valid UTF-8: every maximal invalid subpart (the
// longest prefix of a well-formed sequence, or one bad byte) becomes one
// U+FFFD, as Rust's String::from_utf8_lossy does. When `is_final` is false a
// trailing sequence that is incomplete but still well-formed so far is left
// unconsumed. Returns the number of bytes consumed.
size_t append_utf8_lossy(std::string_view bytes, bool is_final, std::string* out);

// `bytes` as valid UTF-8 (append_utf8_lossy with is_final).
std::string to_valid_utf8(std::string_view bytes);

// Length in bytes of the UTF-8 code point starting with `lead` (1 for
// continuation or invalid lead bytes, so loops always advance).
inline size_t utf8_char_bytes(uint8_t lead) {
  if (lead < 0xC0) return 1;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  return 4;
}

// Unicode Normalization Form C of valid UTF-8 text.
Result<std::string> nfc(std::string_view utf8);

// GPT-2's reversible byte <-> printable code point mapping: bytes that are
// printable Latin-1 map to themselves, the other 68 to U+0100.. in order.
class ByteLevelAlphabet {
 public:
  ByteLevelAlphabet();
  // UTF-8 of the code point standing for byte `b`.
  const std::string& encode(uint8_t b) const { return byte_to_utf8_[b]; }
  // The byte a code point stands for, or -1 if it is not in the alphabet.
  int decode(uint32_t code_point) const {
    return code_point < code_point_to_byte_.size() ? code_point_to_byte_[code_point] : -1;
  }
  // Appends the bytes `token_text` stands for. If any code point is outside
  // the alphabet the token's own UTF-8 is appended instead (as Hugging Face's
  // ByteLevel decoder does).
  void decode_token(std::string_view token_text, std::string* out) const;

 private:
  std::array<std::string, 256> byte_to_utf8_;
  std::array<int16_t, 324> code_point_to_byte_;
};

}  // namespace strata::unicode
