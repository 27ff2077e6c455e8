// UTF-8 validation, NFC via ICU, and the byte-level alphabet.
#include "tokenizer/unicode_text.h"

#include <unicode/bytestream.h>
#include <unicode/errorcode.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

namespace strata::unicode {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// Bounds of the second byte of a sequence led by `lead` (Unicode Table 3-7);
// false for bytes that cannot lead.
bool second_byte_range(uint8_t lead, uint8_t* lo, uint8_t* hi, size_t* len) {
  *lo = 0x80;
  *hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    *len = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    *len = 3;
    if (lead == 0xE0) *lo = 0xA0;
    if (lead == 0xED) *hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    *len = 4;
    if (lead == 0xF0) *lo = 0x90;
    if (lead == 0xF4) *hi = 0x8F;
  } else {
    return false;
  }
  return true;
}

}  // namespace

size_t append_utf8_lossy(std::string_view bytes, bool is_final, std::string* out) {
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n) {
    const auto lead = static_cast<uint8_t>(bytes[i]);
    if (lead < 0x80) {
      out->push_back(static_cast<char>(lead));
      ++i;
      continue;
    }
    uint8_t lo, hi;
    size_t len;
    if (!second_byte_range(lead, &lo, &hi, &len)) {
      out->append(kReplacement);
      ++i;
      continue;
    }
    size_t k = 1;  // bytes of the sequence that are well-formed so far
    while (k < len && i + k < n) {
      const auto b = static_cast<uint8_t>(bytes[i + k]);
      const uint8_t min = k == 1 ? lo : 0x80;
      const uint8_t max = k == 1 ? hi : 0xBF;
      if (b < min || b > max) break;
      ++k;
    }
    if (k == len) {
      out->append(bytes.substr(i, len));
      i += len;
    } else if (i + k == n && !is_final) {
      return i;  // incomplete tail: wait for more bytes
    } else {
      out->append(kReplacement);
      i += k;
    }
  }
  return i;
}

std::string to_valid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  append_utf8_lossy(bytes, /*is_final=*/true, &out);
  return out;
}

Result<std::string> nfc(std::string_view utf8) {
  UErrorCode err = U_ZERO_ERROR;
  const icu::Normalizer2* norm = icu::Normalizer2::getNFCInstance(err);
  if (U_FAILURE(err)) return internal_error(std::string("nfc: ICU: ") + u_errorName(err));
  const icu::StringPiece in(utf8.data(), static_cast<int32_t>(utf8.size()));
  if (norm->isNormalizedUTF8(in, err) && U_SUCCESS(err)) return std::string(utf8);
  err = U_ZERO_ERROR;
  std::string out;
  icu::StringByteSink<std::string> sink(&out);
  norm->normalizeUTF8(0, in, sink, nullptr, err);
  if (U_FAILURE(err)) return invalid_argument(std::string("nfc: ICU: ") + u_errorName(err));
  return out;
}

ByteLevelAlphabet::ByteLevelAlphabet() {
  code_point_to_byte_.fill(-1);
  uint32_t next_extra = 256;
  for (int b = 0; b < 256; ++b) {
    const bool is_printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const uint32_t cp = is_printable ? static_cast<uint32_t>(b) : next_extra++;
    code_point_to_byte_[cp] = static_cast<int16_t>(b);
    std::string s;
    if (cp < 0x80) {
      s.push_back(static_cast<char>(cp));
    } else {
      s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
    byte_to_utf8_[b] = std::move(s);
  }
}

void ByteLevelAlphabet::decode_token(std::string_view token_text, std::string* out) const {
  const size_t start = out->size();
  size_t i = 0;
  while (i < token_text.size()) {
    const auto lead = static_cast<uint8_t>(token_text[i]);
    uint32_t cp = 0;
    size_t len = utf8_char_bytes(lead);
    if (i + len > token_text.size()) len = 1;
    if (len == 1) {
      cp = lead < 0x80 ? lead : 0xFFFFFFFF;
    } else if (len == 2) {
      cp = ((lead & 0x1Fu) << 6) | (static_cast<uint8_t>(token_text[i + 1]) & 0x3Fu);
    } else {
      cp = 0xFFFFFFFF;  // beyond the alphabet (max U+0143)
    }
    const int b = cp == 0xFFFFFFFF ? -1 : decode(cp);
    if (b < 0) {
      out->resize(start);
      out->append(token_text);
      return;
    }
    out->push_back(static_cast<char>(b));
    i += len;
  }
}

}  // namespace strata::unicode
