// Python `str` semantics over UTF-8 text, as Jinja templates see them.
//
// Jinja runs on Python, where a string is a sequence of code points: len(),
// indexing, slicing, strip(), split(), upper() and repr() all work on code
// points and on Python's Unicode tables. strata keeps strings as UTF-8 and
// these free functions give the same answers on it. Invalid UTF-8 bytes are
// treated as one code point each (U+FFFD-like, but kept as the byte), so no
// input can make them fail.
//
// Case mapping and character classes cover ASCII, Latin-1, Latin Extended-A,
// Greek, Cyrillic, Armenian and fullwidth Latin (the scripts whose case a chat
// template could plausibly change); other scripts are caseless here. Python's
// full case mappings that change length are honoured where they fall in
// those ranges ('ß'.upper() == 'SS', 'İ'.lower() == 'i̇'). Stateless and
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::jinja::py {

// ---- code points ----

// Decodes the code point at `s[*pos]` and advances *pos past it. An invalid
// or truncated sequence yields its first byte (as a value >= 0x110000 so it
// never equals a real code point) and advances by one.
char32_t next_code_point(std::string_view s, size_t* pos);
// Appends the UTF-8 of `cp` (a byte produced by next_code_point for invalid
// input is appended as that raw byte).
void append_code_point(char32_t cp, std::string* out);
std::vector<char32_t> decode(std::string_view s);
std::string encode(const std::vector<char32_t>& cps);
bool is_ascii(std::string_view s);
// len(s): the number of code points.
size_t length(std::string_view s);

// ---- character classes (str.isspace() etc. for one code point) ----
bool is_space(char32_t cp);
bool is_printable(char32_t cp);  // str.isprintable(), used by repr()
bool is_alpha(char32_t cp);
bool is_digit(char32_t cp);
bool is_decimal(char32_t cp);
bool is_alnum(char32_t cp);
bool is_lower(char32_t cp);  // a cased lowercase letter
bool is_upper(char32_t cp);  // a cased uppercase letter
// Python's "cased" and "case-ignorable" notions for title()/istitle().
bool is_cased(char32_t cp);

// ---- whole-string operations (Python's str methods) ----
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string capitalize(std::string_view s);
std::string title(std::string_view s);
std::string swapcase(std::string_view s);

// strip/lstrip/rstrip. `chars` null: whitespace (is_space); otherwise the set
// of code points in *chars.
std::string_view strip(std::string_view s, const std::string* chars, bool left, bool right);

// str.split(sep, maxsplit) / rsplit. `sep` null: runs of whitespace, with
// leading/trailing whitespace dropped. maxsplit < 0: no limit. An empty sep
// is a ValueError in Python; callers check it.
std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
// str.splitlines(keepends).
std::vector<std::string> splitlines(std::string_view s, bool keepends);

// str.replace(old, new, count); count < 0: all.
std::string replace(std::string_view s, std::string_view old_text, std::string_view new_text,
                    int64_t count);
// str.find / rfind over code point indices in [start, end) (already clamped
// by the caller to 0..len). Returns a code point index or -1.
int64_t find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool reverse);
// str.count(sub) over the whole string.
int64_t count(std::string_view s, std::string_view sub);

// str.center/ljust/rjust(width, fill); zfill.
std::string pad(std::string_view s, int64_t width, char32_t fill, int align /* -1 l, 0 c, 1 r */);
std::string zfill(std::string_view s, int64_t width);

// str.isX() over the whole string (False for the empty string, as Python).
bool all_space(std::string_view s);
bool all_alpha(std::string_view s);
bool all_digit(std::string_view s);
bool all_alnum(std::string_view s);
bool all_decimal(std::string_view s);
bool is_lower_string(std::string_view s);  // str.islower()
bool is_upper_string(std::string_view s);  // str.isupper()
bool is_title_string(std::string_view s);  // str.istitle()

// Code point slice s[start:stop:step] with Python's index rules; the
// optional bounds are given as has_* flags.
std::string slice(std::string_view s, bool has_start, int64_t start, bool has_stop, int64_t stop,
                  int64_t step);

// repr(s): quotes chosen as Python does, escapes for \\, the quote, \t \n \r
// and non-printable code points (\xHH, \uHHHH, \UHHHHHHHH).
void append_repr(std::string_view s, std::string* out);
std::string repr(std::string_view s);

// markupsafe.escape: & < > " ' as &amp; &lt; &gt; &#34; &#39;.
std::string escape_html(std::string_view s);

}  // namespace strata::jinja::py
