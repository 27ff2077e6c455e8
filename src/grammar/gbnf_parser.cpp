#include "grammar/gbnf_parser.h"

#include <cctype>
#include <map>
#include <string>

namespace strata {

namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
}

class GbnfParser {
 public:
  GbnfParser(std::string_view t, const GbnfLimits& l) : t_(t), lim_(l) {}

  Result<Grammar> parse() {
    if (t_.size() > lim_.max_text_bytes) return invalid_argument("gbnf: grammar text too large");
    skip_space(true);
    while (pos_ < t_.size()) {
      const size_t name_pos = pos_;
      std::string name = read_name();
      if (name.empty()) return error("expected a rule name");
      skip_space(false);
      if (t_.substr(pos_, 3) != "::=") return error("expected '::='");
      pos_ += 3;
      const int32_t rule = rule_id(name, name_pos);
      if (defined_[rule]) return error_at(name_pos, "rule '" + name + "' defined twice");
      defined_[rule] = true;
      skip_space(true);
      STRATA_ASSIGN_OR_RETURN(int32_t body, parse_alternates(0));
      g_.set_body(rule, body);
      skip_space(true);
    }
    for (int32_t r = 0; r < g_.num_rules(); ++r) {
      if (!defined_[r]) return error_at(first_use_[r], "undefined rule '" + g_.rule_name(r) + "'");
    }
    const int32_t root = g_.find_rule("root");
    if (root < 0) return invalid_argument("gbnf: no 'root' rule");
    g_.set_root(root);
    return std::move(g_);
  }

 private:
  Status error_at(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < t_.size(); ++i) {
      if (t_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return invalid_argument("gbnf: " + std::to_string(line) + ":" + std::to_string(col) + ": " +
                            what);
  }
  Status error(const std::string& what) const { return error_at(pos_, what); }

  int32_t rule_id(const std::string& name, size_t at) {
    auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const int32_t r = g_.add_rule(name);
    ids_.emplace(name, r);
    defined_.push_back(false);
    first_use_.push_back(at);
    return r;
  }

  std::string read_name() {
    const size_t s = pos_;
    while (pos_ < t_.size() && is_name_char(t_[pos_])) ++pos_;
    return std::string(t_.substr(s, pos_ - s));
  }

  // Skips blanks and comments; newlines only when `newlines`.
  void skip_space(bool newlines) {
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (c == '#') {
        while (pos_ < t_.size() && t_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  // At a newline (or comment) outside any group: does a new rule start next?
  bool next_is_rule_start() {
    size_t save = pos_;
    skip_space(true);
    const size_t s = pos_;
    while (pos_ < t_.size() && is_name_char(t_[pos_])) ++pos_;
    bool is_rule = pos_ > s;
    if (is_rule) {
      skip_space(false);
      is_rule = t_.substr(pos_, 3) == "::=";
    }
    const bool at_end = s >= t_.size();
    pos_ = save;
    return is_rule || at_end;
  }

  Result<int32_t> parse_alternates(int depth) {
    if (depth > lim_.max_nesting) return error("groups nested too deeply");
    std::vector<int32_t> alts;
    STRATA_ASSIGN_OR_RETURN(int32_t first, parse_sequence(depth));
    alts.push_back(first);
    while (pos_ < t_.size() && t_[pos_] == '|') {
      ++pos_;
      skip_space(true);
      STRATA_ASSIGN_OR_RETURN(int32_t next, parse_sequence(depth));
      alts.push_back(next);
    }
    return g_.alt(std::move(alts));
  }

  Result<uint32_t> hex(int digits) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (pos_ >= t_.size() || !std::isxdigit(static_cast<unsigned char>(t_[pos_])))
        return error("bad hex escape");
      const char h = t_[pos_++];
      v = v * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    if (v > Grammar::kMaxCodepoint) return error("code point out of range");
    return v;
  }

  // One (possibly escaped) character of a literal or class, as a code point.
  Result<uint32_t> read_char() {
    if (pos_ >= t_.size()) return error("unexpected end of grammar");
    const unsigned char c = static_cast<unsigned char>(t_[pos_]);
    if (c == '\\') {
      ++pos_;
      if (pos_ >= t_.size()) return error("unexpected end after '\\'");
      const char e = t_[pos_++];
      switch (e) {
        case 'n':
          return uint32_t{'\n'};
        case 'r':
          return uint32_t{'\r'};
        case 't':
          return uint32_t{'\t'};
        case 'x':
          return hex(2);
        case 'u':
          return hex(4);
        case 'U':
          return hex(8);
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '\'':
          return static_cast<uint32_t>(e);
        default:
          pos_ -= 2;
          return error(std::string("unknown escape '\\") + e + "'");
      }
    }
    // UTF-8 decode.
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || pos_ + n > t_.size()) return error("invalid UTF-8");
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) {
      const unsigned char d = static_cast<unsigned char>(t_[pos_ + k]);
      if ((d & 0xC0) != 0x80) return error("invalid UTF-8");
      cp = (cp << 6) | (d & 0x3F);
    }
    pos_ += n;
    return cp;
  }

  static void append_utf8(std::string* s, uint32_t cp) {
    if (cp < 0x80) {
      s->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  Result<int32_t> parse_sequence(int depth) {
    std::vector<int32_t> items;
    while (pos_ < t_.size()) {
      const char c = t_[pos_];
      if (c == '|' || c == ')') break;
      if (c == '\n' || c == '#') {
        if (depth == 0 && next_is_rule_start()) break;
        skip_space(true);
        continue;
      }
      int32_t atom;
      const size_t atom_pos = pos_;
      if (c == '"') {
        ++pos_;
        std::string lit;
        while (true) {
          if (pos_ >= t_.size()) return error_at(atom_pos, "unterminated string literal");
          if (t_[pos_] == '"') {
            ++pos_;
            break;
          }
          if (t_[pos_] == '\n') return error_at(atom_pos, "unterminated string literal");
          STRATA_ASSIGN_OR_RETURN(uint32_t cp, read_char());
          append_utf8(&lit, cp);
        }
        atom = g_.bytes(lit);
      } else if (c == '[') {
        ++pos_;
        bool negated = false;
        if (pos_ < t_.size() && t_[pos_] == '^') {
          negated = true;
          ++pos_;
        }
        std::vector<CodepointRange> ranges;
        while (true) {
          if (pos_ >= t_.size()) return error_at(atom_pos, "unterminated character class");
          if (t_[pos_] == ']') {
            ++pos_;
            break;
          }
          if (t_[pos_] == '\n') return error_at(atom_pos, "unterminated character class");
          STRATA_ASSIGN_OR_RETURN(uint32_t lo, read_char());
          uint32_t hi = lo;
          if (pos_ + 1 < t_.size() && t_[pos_] == '-' && t_[pos_ + 1] != ']') {
            ++pos_;
            if (t_[pos_] == '\n') return error_at(atom_pos, "unterminated character class");
            STRATA_ASSIGN_OR_RETURN(hi, read_char());
            if (hi < lo) return error("bad character range");
          }
          ranges.push_back({lo, hi});
        }
        atom = g_.char_class(std::move(ranges), negated);
      } else if (c == '(') {
        ++pos_;
        skip_space(true);
        STRATA_ASSIGN_OR_RETURN(atom, parse_alternates(depth + 1));
        if (pos_ >= t_.size() || t_[pos_] != ')') return error("expected ')'");
        ++pos_;
      } else if (c == '.') {
        ++pos_;
        atom = g_.char_class({}, true);
      } else if (is_name_char(c)) {
        const std::string name = read_name();
        atom = g_.ref(rule_id(name, atom_pos));
      } else {
        return error(std::string("unexpected character '") + c + "'");
      }
      skip_space(depth > 0);
      // Postfix operators.
      while (pos_ < t_.size()) {
        const char q = t_[pos_];
        if (q == '*' || q == '+' || q == '?') {
          ++pos_;
          atom = q == '*' ? g_.star(atom) : q == '+' ? g_.plus(atom) : g_.optional(atom);
        } else if (q == '{') {
          ++pos_;
          skip_space(false);
          auto number = [&](int64_t* v) {
            const size_t s = pos_;
            *v = 0;
            while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_])) &&
                   pos_ - s < 9)
              *v = *v * 10 + (t_[pos_++] - '0');
            return pos_ > s;
          };
          int64_t m = 0, n = 0;
          if (!number(&m)) return error("expected a number after '{'");
          skip_space(false);
          n = m;
          if (pos_ < t_.size() && t_[pos_] == ',') {
            ++pos_;
            skip_space(false);
            if (!number(&n)) n = -1;
            skip_space(false);
          }
          if (pos_ >= t_.size() || t_[pos_] != '}') return error("expected '}'");
          ++pos_;
          if (n >= 0 && n < m) return error("repetition {m,n} with n < m");
          if (m > lim_.max_repeat || n > lim_.max_repeat)
            return error("repetition count over " + std::to_string(lim_.max_repeat));
          atom = g_.repeat(atom, static_cast<int32_t>(m), static_cast<int32_t>(n));
        } else {
          break;
        }
        skip_space(depth > 0);
      }
      items.push_back(atom);
    }
    return g_.seq(std::move(items));
  }

  std::string_view t_;
  const GbnfLimits& lim_;
  size_t pos_ = 0;
  Grammar g_;
  std::map<std::string, int32_t> ids_;
  std::vector<bool> defined_;
  std::vector<size_t> first_use_;
};

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text, const GbnfLimits& limits) {
  return GbnfParser(text, limits).parse();
}

}  // namespace strata
