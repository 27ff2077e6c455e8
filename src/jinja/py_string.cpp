#include "jinja/py_string.h"

#include <algorithm>

namespace strata::jinja::py {
namespace {

// Code points produced for invalid bytes: 0x110000 + byte.
constexpr char32_t kRawByteBase = 0x110000;

// ---- case tables ----

// Simple (one code point) lowercase of an uppercase letter, or cp itself.
char32_t simple_lower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c < 0x100) return (c >= 0xC0 && c <= 0xDE && c != 0xD7) ? c + 32 : c;
  if (c < 0x180) {
    if (c == 0x130) return 'i';  // full mapping handled by the caller
    if (c == 0x178) return 0xFF;
    if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) {
      return (c % 2 == 0) ? c + 1 : c;
    }
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 1) ? c + 1 : c;
    return c;
  }
  if (c < 0x250) {
    // Latin Extended-B: the regular pairs and the DŽ/LJ/NJ/DZ triples
    // (upper, title, lower).
    if (c == 0x1C4 || c == 0x1C7 || c == 0x1CA || c == 0x1F1) return c + 2;
    if (c == 0x1C5 || c == 0x1C8 || c == 0x1CB || c == 0x1F2) return c + 1;
    if ((c >= 0x1CD && c <= 0x1DC)) return (c % 2 == 1) ? c + 1 : c;
    if ((c >= 0x1DE && c <= 0x1EF) || (c >= 0x1F8 && c <= 0x21F) || (c >= 0x222 && c <= 0x233) ||
        (c >= 0x246 && c <= 0x24F) || c == 0x1F4) {
      return (c % 2 == 0) ? c + 1 : c;
    }
    return c;
  }
  if (c >= 0x386 && c <= 0x3AB) {
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 37;
    if (c == 0x38C) return 0x3CC;
    if (c == 0x38E || c == 0x38F) return c + 63;
    if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
    return c;
  }
  if (c >= 0x400 && c <= 0x52F) {
    if (c <= 0x40F) return c + 80;
    if (c <= 0x42F) return c + 32;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F)) {
      return (c % 2 == 0) ? c + 1 : c;
    }
    if (c == 0x4C0) return 0x4CF;
    if (c >= 0x4C1 && c <= 0x4CE) return (c % 2 == 1) ? c + 1 : c;
    return c;
  }
  if (c >= 0x531 && c <= 0x556) return c + 48;
  if (c >= 0x1E00 && c <= 0x1EFF) {
    if (c == 0x1E9E) return 0xDF;
    if ((c <= 0x1E95) || (c >= 0x1EA0)) return (c % 2 == 0) ? c + 1 : c;
    return c;
  }
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return c;
}

// Simple uppercase of a lowercase letter, or cp itself.
char32_t simple_upper(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c < 0x100) {
    if (c == 0xB5) return 0x39C;
    if (c == 0xFF) return 0x178;
    return (c >= 0xE0 && c <= 0xFE && c != 0xF7) ? c - 32 : c;
  }
  if (c < 0x180) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if ((c >= 0x100 && c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) {
      return (c % 2 == 1) ? c - 1 : c;
    }
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c % 2 == 0) ? c - 1 : c;
    return c;
  }
  if (c < 0x250) {
    if (c == 0x1C6 || c == 0x1C9 || c == 0x1CC || c == 0x1F3) return c - 2;
    if (c == 0x1C5 || c == 0x1C8 || c == 0x1CB || c == 0x1F2) return c - 1;
    if ((c >= 0x1CD && c <= 0x1DC)) return (c % 2 == 0) ? c - 1 : c;
    if ((c >= 0x1DE && c <= 0x1EF) || (c >= 0x1F8 && c <= 0x21F) || (c >= 0x222 && c <= 0x233) ||
        (c >= 0x246 && c <= 0x24F) || c == 0x1F5) {
      return (c % 2 == 1) ? c - 1 : c;
    }
    return c;
  }
  if (c >= 0x3AC && c <= 0x3CE) {
    if (c == 0x3AC) return 0x386;
    if (c >= 0x3AD && c <= 0x3AF) return c - 37;
    if (c == 0x3C2) return 0x3A3;
    if (c >= 0x3B1 && c <= 0x3CB) return c - 32;
    if (c == 0x3CC) return 0x38C;
    if (c == 0x3CD || c == 0x3CE) return c - 63;
    return c;
  }
  if (c >= 0x430 && c <= 0x52F) {
    if (c <= 0x44F) return c - 32;
    if (c <= 0x45F) return c - 80;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F)) {
      return (c % 2 == 1) ? c - 1 : c;
    }
    if (c == 0x4CF) return 0x4C0;
    if (c >= 0x4C1 && c <= 0x4CE) return (c % 2 == 0) ? c - 1 : c;
    return c;
  }
  if (c >= 0x561 && c <= 0x586) return c - 48;
  if (c >= 0x1E00 && c <= 0x1EFF) {
    if ((c <= 0x1E95) || (c >= 0x1EA0)) return (c % 2 == 1) ? c - 1 : c;
    return c;
  }
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return c;
}

// Lowercase letters without a simple uppercase but with a full one, or none.
bool is_special_lower(char32_t c) {
  return c == 0xDF || c == 0x138 || c == 0x149 || c == 0x1F0 || c == 0x390 || c == 0x3B0 ||
         c == 0x587;
}

// Appends the full uppercase mapping of c.
void append_upper(char32_t c, std::string* out) {
  switch (c) {
    case 0xDF:
      *out += "SS";
      return;
    case 0x149:
      append_code_point(0x2BC, out);
      *out += 'N';
      return;
    case 0x1F0:
      *out += 'J';
      append_code_point(0x30C, out);
      return;
    case 0x390:
      append_code_point(0x399, out);
      append_code_point(0x308, out);
      append_code_point(0x301, out);
      return;
    case 0x3B0:
      append_code_point(0x3A5, out);
      append_code_point(0x308, out);
      append_code_point(0x301, out);
      return;
    case 0x587:
      append_code_point(0x535, out);
      append_code_point(0x552, out);
      return;
    default:
      append_code_point(simple_upper(c), out);
  }
}

// Title case of one code point (Python's capitalize()/title() use it for
// the first letter): the same as uppercase except for a few digraphs.
void append_title(char32_t c, std::string* out) {
  for (char32_t base : {0x1C4, 0x1C7, 0x1CA, 0x1F1}) {
    if (c >= base && c <= base + 2) {
      append_code_point(base + 1, out);
      return;
    }
  }
  switch (c) {
    case 0xDF:
      *out += "Ss";
      return;
    case 0x149:
      append_code_point(0x2BC, out);
      *out += 'N';
      return;
    case 0x587:
      append_code_point(0x535, out);
      append_code_point(0x582, out);
      return;
    default:
      append_upper(c, out);
  }
}

// Appends the full lowercase mapping of cps[i] (final sigma needs context).
void append_lower(const std::vector<char32_t>& cps, size_t i, std::string* out) {
  const char32_t c = cps[i];
  if (c == 0x130) {
    *out += 'i';
    append_code_point(0x307, out);
    return;
  }
  if (c == 0x3A3) {
    // Final sigma: preceded by a cased letter and not followed by one.
    const bool before = i > 0 && is_cased(cps[i - 1]);
    const bool after = i + 1 < cps.size() && is_cased(cps[i + 1]);
    append_code_point(before && !after ? 0x3C2 : 0x3C3, out);
    return;
  }
  append_code_point(simple_lower(c), out);
}

bool in_ranges(char32_t c, std::initializer_list<std::pair<char32_t, char32_t>> ranges) {
  for (const auto& [lo, hi] : ranges) {
    if (c >= lo && c <= hi) return true;
  }
  return false;
}

bool is_linebreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

bool is_member(char32_t c, const std::string& chars) {
  size_t pos = 0;
  while (pos < chars.size()) {
    if (next_code_point(chars, &pos) == c) return true;
  }
  return false;
}

// Byte offset of code point index `index` (clamped to the end).
size_t byte_offset(std::string_view s, int64_t index) {
  size_t pos = 0;
  for (int64_t i = 0; i < index && pos < s.size(); ++i) next_code_point(s, &pos);
  return pos;
}

int64_t cp_index(std::string_view s, size_t byte_pos) {
  size_t pos = 0;
  int64_t n = 0;
  while (pos < byte_pos) {
    next_code_point(s, &pos);
    ++n;
  }
  return n;
}

}  // namespace

char32_t next_code_point(std::string_view s, size_t* pos) {
  const auto b0 = static_cast<uint8_t>(s[*pos]);
  if (b0 < 0x80) {
    ++*pos;
    return b0;
  }
  size_t n = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    n = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    ++*pos;
    return kRawByteBase + b0;
  }
  if (*pos + n > s.size()) {
    ++*pos;
    return kRawByteBase + b0;
  }
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<uint8_t>(s[*pos + k]);
    if ((b & 0xC0) != 0x80) {
      ++*pos;
      return kRawByteBase + b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*pos;
    return kRawByteBase + b0;
  }
  *pos += n;
  return cp;
}

void append_code_point(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < kRawByteBase) {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(cp - kRawByteBase);
  }
}

std::vector<char32_t> decode(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) out.push_back(next_code_point(s, &pos));
  return out;
}

std::string encode(const std::vector<char32_t>& cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps) append_code_point(c, &out);
  return out;
}

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<uint8_t>(c) >= 0x80) return false;
  }
  return true;
}

size_t length(std::string_view s) {
  size_t n = 0;
  for (size_t pos = 0; pos < s.size();) {
    const auto b = static_cast<uint8_t>(s[pos]);
    if (b < 0x80) {
      ++pos;
    } else {
      next_code_point(s, &pos);
    }
    ++n;
  }
  return n;
}

bool is_space(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_printable(char32_t c) {
  if (c < 0x80) return c >= 0x20 && c < 0x7F;
  if (c >= kRawByteBase) return true;
  if (c <= 0xA0 || c == 0xAD) return false;
  if (c == ' ') return true;
  if (is_space(c)) return false;  // Zs, Zl, Zp
  return !in_ranges(
             c,
             {{0x600, 0x605},     {0x61C, 0x61C},     {0x6DD, 0x6DD},     {0x70F, 0x70F},
              {0x890, 0x891},     {0x8E2, 0x8E2},     {0x180E, 0x180E},   {0x200B, 0x200F},
              {0x202A, 0x202E},   {0x2060, 0x2064},   {0x2065, 0x206F},   {0xD800, 0xF8FF},
              {0xFDD0, 0xFDEF},   {0xFEFF, 0xFEFF},   {0xFFF0, 0xFFFB},   {0xFFFE, 0xFFFF},
              {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3},
              {0x1D173, 0x1D17A}, {0x40000, 0xDFFFF}, {0xE0000, 0xE00FF}, {0xE01F0, 0x10FFFF}}) &&
         (c & 0xFFFE) != 0xFFFE;
}

// The titlecase digraphs (ǅ ǈ ǋ ǲ) are cased but neither upper nor lower.
bool is_titlecase(char32_t c) {
  return c == 0x1C5 || c == 0x1C8 || c == 0x1CB || c == 0x1F2;
}
bool is_lower(char32_t c) {
  return !is_titlecase(c) && (simple_upper(c) != c || is_special_lower(c));
}
bool is_upper(char32_t c) {
  return !is_titlecase(c) && simple_lower(c) != c;
}
bool is_cased(char32_t c) {
  return is_lower(c) || is_upper(c) || is_titlecase(c);
}

bool is_alpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (is_cased(c)) return true;
  return in_ranges(c, {{0xAA, 0xAA},
                       {0xBA, 0xBA},
                       {0x5D0, 0x5EA},
                       {0x620, 0x64A},
                       {0x671, 0x6D3},
                       {0x904, 0x939},
                       {0xE01, 0xE30},
                       {0x10D0, 0x10FA},
                       {0x3041, 0x3096},
                       {0x30A1, 0x30FA},
                       {0x3400, 0x4DBF},
                       {0x4E00, 0x9FFF},
                       {0xAC00, 0xD7A3},
                       {0xF900, 0xFAFF},
                       {0x20000, 0x2FA1F}});
}

bool is_decimal(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  return in_ranges(c, {{0x660, 0x669}, {0x6F0, 0x6F9}, {0x966, 0x96F}, {0xFF10, 0xFF19}});
}

bool is_digit(char32_t c) {
  return is_decimal(c) || c == 0xB2 || c == 0xB3 || c == 0xB9 || in_ranges(c, {{0x2460, 0x2468}});
}

bool is_alnum(char32_t c) {
  return is_alpha(c) || is_digit(c);
}

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) append_upper(next_code_point(s, &pos), &out);
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  if (is_ascii(s)) {
    for (char c : s) out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
    return out;
  }
  const std::vector<char32_t> cps = decode(s);
  for (size_t i = 0; i < cps.size(); ++i) append_lower(cps, i, &out);
  return out;
}

std::string capitalize(std::string_view s) {
  const std::vector<char32_t> cps = decode(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    if (i == 0) {
      append_title(cps[i], &out);
    } else {
      append_lower(cps, i, &out);
    }
  }
  return out;
}

std::string title(std::string_view s) {
  const std::vector<char32_t> cps = decode(s);
  std::string out;
  out.reserve(s.size());
  bool previous_is_cased = false;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (previous_is_cased) {
      append_lower(cps, i, &out);
    } else {
      append_title(cps[i], &out);
    }
    previous_is_cased = is_cased(cps[i]);
  }
  return out;
}

std::string swapcase(std::string_view s) {
  const std::vector<char32_t> cps = decode(s);
  std::string out;
  for (size_t i = 0; i < cps.size(); ++i) {
    if (is_upper(cps[i])) {
      append_lower(cps, i, &out);
    } else if (is_lower(cps[i])) {
      append_upper(cps[i], &out);
    } else {
      append_code_point(cps[i], &out);
    }
  }
  return out;
}

std::string_view strip(std::string_view s, const std::string* chars, bool left, bool right) {
  auto is_stripped = [&](char32_t c) { return chars ? is_member(c, *chars) : is_space(c); };
  size_t begin = 0;
  size_t end = s.size();
  if (left) {
    while (begin < end) {
      size_t next = begin;
      if (!is_stripped(next_code_point(s, &next))) break;
      begin = next;
    }
  }
  if (right) {
    while (end > begin) {
      // Step back to the start of the last code point.
      size_t start = end - 1;
      while (start > begin && (static_cast<uint8_t>(s[start]) & 0xC0) == 0x80 && end - start < 4) {
        --start;
      }
      size_t probe = start;
      char32_t c = next_code_point(s, &probe);
      if (probe != end) {  // not a whole code point: the last byte alone
        start = end - 1;
        probe = start;
        c = next_code_point(s, &probe);
      }
      if (!is_stripped(c)) break;
      end = start;
    }
  }
  return s.substr(begin, end - begin);
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t hit = s.find(*sep, start);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(start, hit - start));
      start = hit + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  size_t pos = 0;
  while (pos < s.size()) {
    // Skip whitespace.
    size_t next = pos;
    if (is_space(next_code_point(s, &next))) {
      pos = next;
      continue;
    }
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      // The rest, trailing whitespace included (as CPython).
      out.emplace_back(s.substr(pos));
      return out;
    }
    size_t end = pos;
    while (end < s.size()) {
      size_t probe = end;
      if (is_space(next_code_point(s, &probe))) break;
      end = probe;
    }
    out.emplace_back(s.substr(pos, end - pos));
    pos = end;
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (maxsplit < 0) return split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  const std::vector<char32_t> cps = decode(s);
  size_t end = cps.size();
  while (end > 0) {
    if (is_space(cps[end - 1])) {
      --end;
      continue;
    }
    if (static_cast<int64_t>(out.size()) >= maxsplit) {
      // The rest, leading whitespace included (as CPython).
      out.push_back(encode(std::vector<char32_t>(cps.begin(), cps.begin() + end)));
      end = 0;
      break;
    }
    size_t begin = end;
    while (begin > 0 && !is_space(cps[begin - 1])) --begin;
    out.push_back(encode(std::vector<char32_t>(cps.begin() + begin, cps.begin() + end)));
    end = begin;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t line_start = 0;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t at = pos;
    const char32_t c = next_code_point(s, &pos);
    if (!is_linebreak(c)) continue;
    if (c == '\r' && pos < s.size() && s[pos] == '\n') ++pos;
    out.emplace_back(s.substr(line_start, (keepends ? pos : at) - line_start));
    line_start = pos;
  }
  if (line_start < s.size()) out.emplace_back(s.substr(line_start));
  return out;
}

std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text,
                    int64_t count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts `new` between every code point and at both ends.
    int64_t n = 0;
    size_t pos = 0;
    if (count != 0) {
      out += new_text;
      ++n;
    }
    while (pos < s.size()) {
      const size_t start = pos;
      next_code_point(s, &pos);
      out += s.substr(start, pos - start);
      if (count < 0 || n < count) {
        out += new_text;
        ++n;
      }
    }
    return out;
  }
  size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t hit = s.find(old_text, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += new_text;
    start = hit + old_text.size();
    ++n;
  }
  out += s.substr(start);
  return out;
}

int64_t find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool reverse) {
  const size_t b = byte_offset(s, start);
  const size_t e = byte_offset(s, end);
  if (e < b || e - b < sub.size()) return -1;
  const std::string_view window = s.substr(b, e - b);
  const size_t hit = reverse ? window.rfind(sub) : window.find(sub);
  if (hit == std::string_view::npos) return -1;
  return start + cp_index(window, hit);
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(length(s)) + 1;
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos;
       pos = s.find(sub, pos + sub.size())) {
    ++n;
  }
  return n;
}

std::string pad(std::string_view s, int64_t width, char32_t fill, int align) {
  const auto len = static_cast<int64_t>(length(s));
  if (width <= len) return std::string(s);
  const int64_t total = width - len;
  int64_t left = 0;
  if (align > 0) {
    left = total;
  } else if (align == 0) {
    // CPython: left = marg / 2 + (marg & width & 1).
    left = total / 2 + (total & width & 1);
  }
  std::string fill_text;
  append_code_point(fill, &fill_text);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill_text;
  out += s;
  for (int64_t i = 0; i < total - left; ++i) out += fill_text;
  return out;
}

std::string zfill(std::string_view s, int64_t width) {
  const auto len = static_cast<int64_t>(length(s));
  if (width <= len) return std::string(s);
  std::string out;
  size_t rest = 0;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    out += s[0];
    rest = 1;
  }
  out.append(static_cast<size_t>(width - len), '0');
  out += s.substr(rest);
  return out;
}

namespace {
template <typename Pred>
bool all_of_string(std::string_view s, Pred pred) {
  if (s.empty()) return false;
  for (size_t pos = 0; pos < s.size();) {
    if (!pred(next_code_point(s, &pos))) return false;
  }
  return true;
}
}  // namespace

bool all_space(std::string_view s) {
  return all_of_string(s, is_space);
}
bool all_alpha(std::string_view s) {
  return all_of_string(s, is_alpha);
}
bool all_digit(std::string_view s) {
  return all_of_string(s, is_digit);
}
bool all_alnum(std::string_view s) {
  return all_of_string(s, is_alnum);
}
bool all_decimal(std::string_view s) {
  return all_of_string(s, is_decimal);
}

bool is_lower_string(std::string_view s) {
  bool cased = false;
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = next_code_point(s, &pos);
    if (is_upper(c)) return false;
    if (is_lower(c)) cased = true;
  }
  return cased;
}

bool is_upper_string(std::string_view s) {
  bool cased = false;
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = next_code_point(s, &pos);
    if (is_lower(c)) return false;
    if (is_upper(c)) cased = true;
  }
  return cased;
}

bool is_title_string(std::string_view s) {
  bool cased = false;
  bool previous_is_cased = false;
  for (size_t pos = 0; pos < s.size();) {
    const char32_t c = next_code_point(s, &pos);
    if (is_upper(c)) {
      if (previous_is_cased) return false;
      previous_is_cased = true;
      cased = true;
    } else if (is_lower(c)) {
      if (!previous_is_cased) return false;
      previous_is_cased = true;
      cased = true;
    } else {
      previous_is_cased = false;
    }
  }
  return cased;
}

std::string slice(std::string_view s, bool has_start, int64_t start, bool has_stop, int64_t stop,
                  int64_t step) {
  const bool ascii = is_ascii(s);
  std::vector<char32_t> cps;
  if (!ascii) cps = decode(s);
  const auto n = static_cast<int64_t>(ascii ? s.size() : cps.size());
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](bool has, int64_t v, int64_t dflt) {
    if (!has) return dflt;
    if (v < 0) {
      v += n;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= n) {
      v = step < 0 ? n - 1 : n;
    }
    return v;
  };
  const int64_t b = adjust(has_start, start, step < 0 ? n - 1 : 0);
  const int64_t e = adjust(has_stop, stop, step < 0 ? -1 : n);
  std::string out;
  if (step > 0) {
    if (ascii && step == 1) return b < e ? std::string(s.substr(b, e - b)) : std::string();
    for (int64_t i = b; i < e; i += step) {
      if (ascii) {
        out += s[i];
      } else {
        append_code_point(cps[i], &out);
      }
    }
  } else {
    for (int64_t i = b; i > e; i += step) {
      if (ascii) {
        out += s[i];
      } else {
        append_code_point(cps[i], &out);
      }
    }
  }
  return out;
}

std::string repr(std::string_view s) {
  std::string out;
  append_repr(s, &out);
  return out;
}

void append_repr(std::string_view s, std::string* out) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  *out += quote;
  static const char* kHex = "0123456789abcdef";
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const char32_t c = next_code_point(s, &pos);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      *out += '\\';
      *out += static_cast<char>(c);
    } else if (c == '\t') {
      *out += "\\t";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (c == '\r') {
      *out += "\\r";
    } else if (c >= kRawByteBase) {
      *out += s.substr(start, pos - start);
    } else if (!is_printable(c)) {
      int digits = 0;
      if (c < 0x100) {
        *out += "\\x";
        digits = 2;
      } else if (c < 0x10000) {
        *out += "\\u";
        digits = 4;
      } else {
        *out += "\\U";
        digits = 8;
      }
      for (int k = digits - 1; k >= 0; --k) *out += kHex[(c >> (4 * k)) & 0xF];
    } else {
      *out += s.substr(start, pos - start);
    }
  }
  *out += quote;
}

std::string escape_html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace strata::jinja::py
