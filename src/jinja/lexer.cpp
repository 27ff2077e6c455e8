#include "jinja/lexer.h"

#include <charconv>
#include <cmath>

#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "jinja/value_format.h"

namespace strata::jinja {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_hex_digit(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexerOptions& options) : options_(options) {
    // Newlines to "\n" (Jinja splits on \r\n, \r and \n and rejoins), then
    // one trailing newline dropped (keep_trailing_newline is off).
    src_.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        src_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        src_ += source[i];
      }
    }
    if (!src_.empty() && src_.back() == '\n') src_.pop_back();
    line_starts_.push_back(0);
    for (size_t i = 0; i < src_.size(); ++i) {
      if (src_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root_step();
    Token eof;
    eof.type = TokenType::kEof;
    set_position(src_.size(), &eof);
    out_.push_back(std::move(eof));
    return std::move(out_);
  }

 private:
  void set_position(size_t offset, Token* t) const {
    size_t lo = 0;
    size_t hi = line_starts_.size();
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      if (line_starts_[mid] <= offset) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    t->line = static_cast<int>(lo + 1);
    t->column = static_cast<int>(offset - line_starts_[lo] + 1);
  }

  [[noreturn]] void fail(std::string message, size_t offset) const {
    Token t;
    set_position(offset, &t);
    throw TemplateException(
        TemplateError(ErrorKind::kSyntax, std::move(message), t.line, t.column));
  }

  Token& emit(TokenType type, std::string text, size_t offset) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    set_position(offset, &t);
    out_.push_back(std::move(t));
    return out_.back();
  }

  bool starts_with(size_t at, std::string_view s) const {
    return src_.compare(at, s.size(), s) == 0;
  }

  // Skips Python whitespace (\s) from `at`; returns the new offset.
  size_t skip_space(size_t at) const {
    while (at < src_.size()) {
      size_t next = at;
      if (!py::is_space(py::next_code_point(src_, &next))) break;
      at = next;
    }
    return at;
  }

  // Applies `-` / lstrip_blocks to the text before a tag.
  std::string_view control_whitespace(std::string_view text, char sign, bool is_variable) const {
    if (sign == '-') return py::strip(text, nullptr, false, true);
    if (sign != '+' && options_.lstrip_blocks && !is_variable) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if (l_pos > 0 || line_starting_) {
        const std::string_view tail = text.substr(l_pos);
        if (!tail.empty() && py::strip(tail, nullptr, true, false).empty()) {
          return text.substr(0, l_pos);
        }
      }
    }
    return text;
  }

  void lex_root_step() {
    // The earliest "{{", "{%" or "{#".
    size_t tag = pos_;
    while (true) {
      tag = src_.find('{', tag);
      if (tag == std::string::npos || tag + 1 >= src_.size()) {
        tag = std::string::npos;
        break;
      }
      const char c = src_[tag + 1];
      if (c == '{' || c == '%' || c == '#') break;
      ++tag;
    }
    if (tag == std::string::npos) {
      emit(TokenType::kData, src_.substr(pos_), pos_);
      pos_ = src_.size();
      return;
    }
    const char kind = src_[tag + 1];
    size_t after = tag + 2;
    char sign = 0;
    if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) sign = src_[after];
    // {% raw %} (also {%- raw -%}); its opening tag never trims a newline.
    size_t raw_end = 0;
    if (kind == '%') {
      size_t p = skip_space(after + (sign ? 1 : 0));
      if (starts_with(p, "raw")) {
        p = skip_space(p + 3);
        if (starts_with(p, "-%}")) {
          raw_end = skip_space(p + 3);
        } else if (starts_with(p, "%}")) {
          raw_end = p + 2;
        }
      }
    }
    const std::string_view text =
        control_whitespace(std::string_view(src_).substr(pos_, tag - pos_), sign, kind == '{');
    if (!text.empty()) emit(TokenType::kData, std::string(text), pos_);
    if (raw_end > 0) {
      line_starting_ = src_[raw_end - 1] == '\n';
      lex_raw(raw_end);
      return;
    }
    pos_ = after + (sign ? 1 : 0);
    line_starting_ = false;
    if (kind == '#') {
      lex_comment(tag);
    } else if (kind == '%') {
      emit(TokenType::kBlockBegin, "{%", tag);
      lex_tag(/*is_block=*/true);
    } else {
      emit(TokenType::kVariableBegin, "{{", tag);
      lex_tag(/*is_block=*/false);
    }
  }

  // After the closing "%}" / "#}" of a tag at `at` (the position of `%` or
  // `#`), with its sign: returns where the text after it begins.
  size_t after_tag_end(size_t end_start, char sign, size_t close_len) const {
    size_t after = end_start + (sign ? 1 : 0) + close_len;
    if (sign == '-') return skip_space(after);
    if (sign == 0 && options_.trim_blocks && after < src_.size() && src_[after] == '\n') {
      ++after;
    }
    return after;
  }

  void lex_comment(size_t tag) {
    const size_t close = src_.find("#}", pos_);
    if (close == std::string::npos) fail("Missing end of comment tag", tag);
    char sign = 0;
    size_t end_start = close;
    if (close > pos_ && (src_[close - 1] == '-' || src_[close - 1] == '+')) {
      sign = src_[close - 1];
      end_start = close - 1;
    }
    pos_ = after_tag_end(end_start, sign, 2);
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  void lex_raw(size_t body) {
    // The first "{%[-+]? endraw [-+]?%}".
    size_t search = body;
    while (true) {
      const size_t tag = src_.find("{%", search);
      if (tag == std::string::npos) fail("Missing end of raw directive", body);
      size_t p = tag + 2;
      char sign = 0;
      if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) sign = src_[p++];
      p = skip_space(p);
      if (!starts_with(p, "endraw")) {
        search = tag + 1;
        continue;
      }
      p = skip_space(p + 6);
      char end_sign = 0;
      if (starts_with(p, "+%}") || starts_with(p, "-%}")) {
        end_sign = src_[p];
      } else if (!starts_with(p, "%}")) {
        search = tag + 1;
        continue;
      }
      const std::string_view text =
          control_whitespace(std::string_view(src_).substr(body, tag - body), sign, false);
      if (!text.empty()) emit(TokenType::kData, std::string(text), body);
      pos_ = after_tag_end(p, end_sign, 2);
      line_starting_ = src_[pos_ - 1] == '\n';
      return;
    }
  }

  // (\d+_)*\d+ from `at` (a digit); returns the end.
  size_t digit_group(size_t at) const {
    while (at < src_.size() && is_digit(src_[at])) ++at;
    while (at + 1 < src_.size() && src_[at] == '_' && is_digit(src_[at + 1])) {
      ++at;
      while (at < src_.size() && is_digit(src_[at])) ++at;
    }
    return at;
  }

  // Jinja's float_re at pos_; returns the end or 0.
  size_t match_float() const {
    if (pos_ > 0 && src_[pos_ - 1] == '.') return 0;
    if (!is_digit(src_[pos_])) return 0;
    const size_t mantissa = digit_group(pos_);
    auto exponent = [&](size_t at) -> size_t {
      if (at >= src_.size() || (src_[at] != 'e' && src_[at] != 'E')) return 0;
      ++at;
      if (at < src_.size() && (src_[at] == '+' || src_[at] == '-')) ++at;
      if (at >= src_.size() || !is_digit(src_[at])) return 0;
      return digit_group(at);
    };
    const bool has_fraction =
        mantissa + 1 < src_.size() && src_[mantissa] == '.' && is_digit(src_[mantissa + 1]);
    if (has_fraction) {
      const size_t fraction = digit_group(mantissa + 1);
      if (const size_t e = exponent(fraction)) return e;
    }
    if (const size_t e = exponent(mantissa)) return e;
    if (has_fraction) return digit_group(mantissa + 1);
    return 0;
  }

  // Jinja's integer_re at pos_; returns the end or 0.
  size_t match_integer() const {
    const size_t n = src_.size();
    auto prefixed = [&](char lower, auto is_allowed) -> size_t {
      if (pos_ + 2 >= n || src_[pos_] != '0' || (src_[pos_ + 1] | 0x20) != lower) return 0;
      size_t at = pos_ + 2;
      size_t end = 0;
      while (true) {
        size_t p = at;
        if (p < n && src_[p] == '_') ++p;
        if (p < n && is_allowed(src_[p])) {
          at = p + 1;
          end = at;
        } else {
          break;
        }
      }
      return end;
    };
    if (size_t e = prefixed('b', [](char c) { return c == '0' || c == '1'; })) return e;
    if (size_t e = prefixed('o', [](char c) { return c >= '0' && c <= '7'; })) return e;
    if (size_t e = prefixed('x', is_hex_digit)) return e;
    const char first = src_[pos_];
    if (first < '0' || first > '9') return 0;
    const char allowed_max = first == '0' ? '0' : '9';
    size_t at = pos_ + 1;
    while (true) {
      size_t p = at;
      if (p < n && src_[p] == '_') ++p;
      if (p < n && src_[p] >= '0' && src_[p] <= allowed_max) {
        at = p + 1;
      } else {
        break;
      }
    }
    return at;
  }

  void emit_integer(size_t end) {
    std::string digits;
    for (size_t i = pos_; i < end; ++i) {
      if (src_[i] != '_') digits += src_[i];
    }
    int base = 10;
    size_t skip = 0;
    if (digits.size() > 1 && digits[0] == '0' && !is_digit(digits[1])) {
      const char p = static_cast<char>(digits[1] | 0x20);
      base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
      skip = 2;
    }
    Token& t = emit(TokenType::kInteger, src_.substr(pos_, end - pos_), pos_);
    auto res =
        std::from_chars(digits.data() + skip, digits.data() + digits.size(), t.int_value, base);
    t.int_overflow = res.ec != std::errc();
  }

  void emit_float(size_t end) {
    std::string digits;
    for (size_t i = pos_; i < end; ++i) {
      if (src_[i] != '_') digits += src_[i];
    }
    Token& t = emit(TokenType::kFloat, src_.substr(pos_, end - pos_), pos_);
    auto res = std::from_chars(digits.data(), digits.data() + digits.size(), t.float_value);
    if (res.ec == std::errc::result_out_of_range) {
      // Python: overflow gives inf, underflow 0.0.
      t.float_value = digits.find_first_of("eE") != std::string::npos &&
                              digits[digits.find_first_of("eE") + 1] == '-'
                          ? 0.0
                          : HUGE_VAL;
    }
  }

  size_t match_name() const {
    size_t at = pos_;
    while (at < src_.size()) {
      const char c = src_[at];
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '_') {
        ++at;
        continue;
      }
      if (static_cast<uint8_t>(c) < 0x80) break;
      size_t next = at;
      const char32_t cp = py::next_code_point(src_, &next);
      if (!py::is_alpha(cp) && !py::is_digit(cp)) break;
      at = next;
    }
    return at;
  }

  // Python's unicode-escape decoding of a string literal body.
  std::string unescape(std::string_view body, size_t offset) const {
    std::string out;
    out.reserve(body.size());
    size_t pos = 0;
    while (pos < body.size()) {
      const char c = body[pos];
      if (c != '\\') {
        out += c;
        ++pos;
        continue;
      }
      ++pos;
      const auto b = static_cast<uint8_t>(body[pos]);
      if (b >= 0x80) {
        // backslashreplace turned the character into \xHH / \uHHHH /
        // \UHHHHHHHH first; the backslash before it escapes that backslash.
        const char32_t cp = py::next_code_point(body, &pos);
        static const char* kHex = "0123456789abcdef";
        out += '\\';
        int digits = 8;
        if (cp < 0x100) {
          out += 'x';
          digits = 2;
        } else if (cp < 0x10000) {
          out += 'u';
          digits = 4;
        } else {
          out += 'U';
        }
        for (int k = digits - 1; k >= 0; --k) out += kHex[(cp >> (4 * k)) & 0xF];
        continue;
      }
      const char e = body[pos++];
      switch (e) {
        case '\n':
          break;
        case '\\':
          out += '\\';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          const int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t v = 0;
          for (int k = 0; k < digits; ++k) {
            if (pos >= body.size() || !is_hex_digit(body[pos])) {
              fail(std::string(
                       "(unicode error) 'unicodeescape' codec can't decode bytes: truncated \\") +
                       e + std::string(static_cast<size_t>(digits), 'X') + " escape",
                   offset);
            }
            v = v * 16 + static_cast<uint32_t>(hex_value(body[pos++]));
          }
          if (v > 0x10FFFF) fail("illegal Unicode character", offset);
          py::append_code_point(v >= 0xD800 && v <= 0xDFFF ? 0xFFFD : v, &out);
          break;
        }
        case 'N':
          fail("\\N{...} escapes are not supported", offset);
        default:
          if (e >= '0' && e <= '7') {
            uint32_t v = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && pos < body.size() && body[pos] >= '0' && body[pos] <= '7';
                 ++k) {
              v = v * 8 + static_cast<uint32_t>(body[pos++] - '0');
            }
            py::append_code_point(v, &out);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    return out;
  }

  // Returns the end of a string literal starting at pos_, or 0.
  size_t match_string() const {
    const char quote = src_[pos_];
    size_t at = pos_ + 1;
    while (at < src_.size()) {
      const char c = src_[at];
      if (c == '\\') {
        if (at + 1 >= src_.size()) return 0;
        at += 2;
      } else if (c == quote) {
        return at + 1;
      } else {
        ++at;
      }
    }
    return 0;
  }

  void lex_tag(bool is_block) {
    std::vector<char> balance;
    while (pos_ < src_.size()) {
      if (balance.empty()) {
        if (is_block) {
          if (starts_with(pos_, "+%}") || starts_with(pos_, "-%}") || starts_with(pos_, "%}")) {
            const char sign = src_[pos_] == '%' ? 0 : src_[pos_];
            emit(TokenType::kBlockEnd, "%}", pos_);
            pos_ = after_tag_end(pos_, sign, 2);
            line_starting_ = src_[pos_ - 1] == '\n';
            return;
          }
        } else if (starts_with(pos_, "-}}")) {
          emit(TokenType::kVariableEnd, "}}", pos_);
          pos_ = skip_space(pos_ + 3);
          line_starting_ = src_[pos_ - 1] == '\n';
          return;
        } else if (starts_with(pos_, "}}")) {
          emit(TokenType::kVariableEnd, "}}", pos_);
          pos_ += 2;
          line_starting_ = false;
          return;
        }
      }
      const size_t space_end = skip_space(pos_);
      if (space_end > pos_) {
        pos_ = space_end;
        continue;
      }
      if (const size_t e = match_float()) {
        emit_float(e);
        pos_ = e;
        continue;
      }
      if (const size_t e = match_integer()) {
        emit_integer(e);
        pos_ = e;
        continue;
      }
      if (const size_t e = match_name(); e > pos_) {
        emit(TokenType::kName, src_.substr(pos_, e - pos_), pos_);
        pos_ = e;
        continue;
      }
      const char c = src_[pos_];
      if (c == '\'' || c == '"') {
        if (const size_t e = match_string()) {
          emit(TokenType::kString,
               unescape(std::string_view(src_).substr(pos_ + 1, e - pos_ - 2), pos_), pos_);
          pos_ = e;
          continue;
        }
      }
      static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
      std::string op;
      for (std::string_view two : kTwo) {
        if (starts_with(pos_, two)) {
          op = std::string(two);
          break;
        }
      }
      if (op.empty() &&
          std::string_view("+-/*%~[](){}><=.:|,;").find(c) != std::string_view::npos) {
        op = std::string(1, c);
      }
      if (op.empty()) {
        std::string shown;
        size_t next = pos_;
        py::next_code_point(src_, &next);
        py::append_repr(src_.substr(pos_, next - pos_), &shown);
        fail("unexpected char " + shown + " at " + std::to_string(pos_), pos_);
      }
      if (op == "{" || op == "(" || op == "[") {
        balance.push_back(op == "{" ? '}' : op == "(" ? ')' : ']');
      } else if (op == "}" || op == ")" || op == "]") {
        if (balance.empty()) fail("unexpected '" + op + "'", pos_);
        const char expected = balance.back();
        balance.pop_back();
        if (expected != op[0]) {
          fail("unexpected '" + op + "', expected '" + std::string(1, expected) + "'", pos_);
        }
      }
      emit(TokenType::kOperator, op, pos_);
      pos_ += op.size();
    }
  }

  LexerOptions options_;
  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;
  size_t pos_ = 0;
  bool line_starting_ = true;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

std::string describe_token(const Token& token) {
  switch (token.type) {
    case TokenType::kData:
      return "template data / text";
    case TokenType::kVariableBegin:
      return "begin of print statement";
    case TokenType::kVariableEnd:
      return "end of print statement";
    case TokenType::kBlockBegin:
      return "begin of statement block";
    case TokenType::kBlockEnd:
      return "end of statement block";
    case TokenType::kName:
      return token.text;
    case TokenType::kString:
      return "string";
    case TokenType::kInteger:
      return "integer";
    case TokenType::kFloat:
      return "float";
    case TokenType::kOperator:
      return token.text;
    case TokenType::kEof:
      return "end of template";
  }
  return "token";
}

}  // namespace strata::jinja
