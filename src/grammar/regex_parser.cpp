#include "grammar/regex_parser.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace strata {

namespace {

// Decodes one UTF-8 code point at s[*i]; invalid bytes read as U+FFFD.
uint32_t next_codepoint(std::string_view s, size_t* i) {
  const unsigned char c = static_cast<unsigned char>(s[*i]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || *i + n > s.size()) {
    ++*i;
    return 0xFFFD;
  }
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < n; ++k) {
    const unsigned char d = static_cast<unsigned char>(s[*i + k]);
    if ((d & 0xC0) != 0x80) {
      ++*i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (d & 0x3F);
  }
  *i += n;
  return cp;
}

struct Ast {
  enum Kind { kEmpty, kClass, kSeq, kAlt, kRepeat } kind = kEmpty;
  std::vector<CodepointRange> ranges;
  std::vector<int32_t> kids;
  int32_t min = 0, max = -1;
};

const std::vector<CodepointRange> kDigit = {{'0', '9'}};
const std::vector<CodepointRange> kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CodepointRange> kSpace = {{'\t', '\r'}, {' ', ' '}};

// \D \W \S: the ASCII complement only, so that a generated character means
// the same under ASCII (PCRE2, ECMA) and Unicode (Python re) class rules.
std::vector<CodepointRange> ascii_complement(const std::vector<CodepointRange>& r) {
  std::vector<CodepointRange> out;
  for (const auto& c : complement_ranges(r))
    if (c.lo <= 0x7F) out.push_back({c.lo, std::min<uint32_t>(c.hi, 0x7F)});
  return out;
}

class Parser {
 public:
  Parser(std::string_view p, const RegexLimits& l) : p_(p), lim_(l) {}

  Result<int32_t> parse() {
    if (!p_.empty() && p_[0] == '^') pos_ = 1;
    if (p_.size() > pos_ && p_.back() == '$' && !escaped_at(p_.size() - 1))
      end_ = p_.size() - 1;
    else
      end_ = p_.size();
    STRATA_ASSIGN_OR_RETURN(int32_t root, parse_alt(0));
    if (pos_ < end_) return error("unbalanced ')'");
    return root;
  }
  std::vector<Ast>& nodes() { return nodes_; }

 private:
  bool escaped_at(size_t i) const {
    size_t n = 0;
    while (i > n && p_[i - 1 - n] == '\\') ++n;
    return n % 2 == 1;
  }
  Status error(const std::string& what) const {
    return invalid_argument("regex: " + what + " at offset " + std::to_string(pos_));
  }
  int32_t add(Ast a) {
    nodes_.push_back(std::move(a));
    return static_cast<int32_t>(nodes_.size() - 1);
  }
  int32_t add_class(std::vector<CodepointRange> r) {
    Ast a;
    a.kind = Ast::kClass;
    a.ranges = normalize_ranges(std::move(r));
    return add(std::move(a));
  }
  bool at_end() const { return pos_ >= end_; }

  Result<int32_t> parse_alt(int depth) {
    if (depth > lim_.max_nesting) return error("groups nested too deeply");
    std::vector<int32_t> alts;
    STRATA_ASSIGN_OR_RETURN(int32_t first, parse_seq(depth));
    alts.push_back(first);
    while (!at_end() && p_[pos_] == '|') {
      ++pos_;
      STRATA_ASSIGN_OR_RETURN(int32_t next, parse_seq(depth));
      alts.push_back(next);
    }
    if (alts.size() == 1) return alts[0];
    Ast a;
    a.kind = Ast::kAlt;
    a.kids = std::move(alts);
    return add(std::move(a));
  }

  Result<int32_t> parse_seq(int depth) {
    std::vector<int32_t> items;
    while (!at_end() && p_[pos_] != '|' && p_[pos_] != ')') {
      STRATA_ASSIGN_OR_RETURN(int32_t atom, parse_atom(depth));
      STRATA_ASSIGN_OR_RETURN(atom, parse_quantifiers(atom));
      items.push_back(atom);
    }
    if (items.size() == 1) return items[0];
    Ast a;
    a.kind = items.empty() ? Ast::kEmpty : Ast::kSeq;
    a.kids = std::move(items);
    return add(std::move(a));
  }

  // {m}, {m,}, {m,n} at pos_; false when the text is not a quantifier.
  bool read_braces(int64_t* m, int64_t* n) {
    size_t i = pos_ + 1;
    auto number = [&](int64_t* v) {
      const size_t s = i;
      *v = 0;
      while (i < end_ && p_[i] >= '0' && p_[i] <= '9' && i - s < 9) *v = *v * 10 + (p_[i++] - '0');
      return i > s;
    };
    if (!number(m)) return false;
    *n = *m;
    if (i < end_ && p_[i] == ',') {
      ++i;
      if (!number(n)) *n = -1;
    }
    if (i >= end_ || p_[i] != '}') return false;
    pos_ = i + 1;
    return true;
  }

  Result<int32_t> parse_quantifiers(int32_t atom) {
    bool quantified = false;
    while (!at_end()) {
      const char c = p_[pos_];
      int64_t m, n;
      if (c == '*' || c == '+' || c == '?') {
        m = c == '+' ? 1 : 0;
        n = c == '?' ? 1 : -1;
        ++pos_;
      } else if (c == '{') {
        const size_t save = pos_;
        if (!read_braces(&m, &n)) {
          pos_ = save;
          return atom;
        }
        if (n >= 0 && n < m) return error("quantifier {m,n} with n < m");
        if (m > lim_.max_repeat || n > lim_.max_repeat)
          return error("repetition count over " + std::to_string(lim_.max_repeat));
      } else {
        return atom;
      }
      if (quantified) return error("multiple repeat");
      quantified = true;
      if (!at_end() && p_[pos_] == '?') ++pos_;  // lazy: same language
      if (!at_end() && p_[pos_] == '+') return error("possessive quantifier unsupported");
      Ast a;
      a.kind = Ast::kRepeat;
      a.kids = {atom};
      a.min = static_cast<int32_t>(m);
      a.max = static_cast<int32_t>(n);
      atom = add(std::move(a));
    }
    return atom;
  }

  Result<uint32_t> hex(size_t digits) {
    uint32_t v = 0;
    for (size_t k = 0; k < digits; ++k) {
      if (at_end() || !std::isxdigit(static_cast<unsigned char>(p_[pos_])))
        return error("bad hex escape");
      const char h = p_[pos_++];
      v = v * 16 + (h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
    }
    return v;
  }

  // After a backslash: a class (ranges) or one code point.
  Result<std::vector<CodepointRange>> parse_escape(bool in_class) {
    if (at_end()) return error("trailing backslash");
    const char c = p_[pos_++];
    auto one = [](uint32_t cp) { return std::vector<CodepointRange>{{cp, cp}}; };
    switch (c) {
      case 'd':
        return kDigit;
      case 'w':
        return kWord;
      case 's':
        return kSpace;
      case 'D':
        return ascii_complement(normalize_ranges(kDigit));
      case 'W':
        return ascii_complement(normalize_ranges(kWord));
      case 'S':
        return ascii_complement(normalize_ranges(kSpace));
      case 'n':
        return one('\n');
      case 't':
        return one('\t');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case '0':
        return one(0);
      case 'x': {
        STRATA_ASSIGN_OR_RETURN(uint32_t v, hex(2));
        return one(v);
      }
      case 'u': {
        if (!at_end() && p_[pos_] == '{') {
          ++pos_;
          uint32_t v = 0;
          size_t k = 0;
          while (!at_end() && p_[pos_] != '}' && k < 7) {
            STRATA_ASSIGN_OR_RETURN(uint32_t d, hex(1));
            v = v * 16 + d;
            ++k;
          }
          if (at_end() || p_[pos_] != '}' || k == 0 || v > Grammar::kMaxCodepoint)
            return error("bad \\u{...} escape");
          ++pos_;
          return one(v);
        }
        STRATA_ASSIGN_OR_RETURN(uint32_t v, hex(4));
        return one(v);
      }
      default:
        break;
    }
    if (c == 'b' && in_class) return one('\b');
    if (std::isalnum(static_cast<unsigned char>(c))) {
      --pos_;
      return error(std::string("unsupported escape \\") + c);
    }
    if (static_cast<unsigned char>(c) >= 0x80) {
      --pos_;
      size_t i = pos_;
      const uint32_t cp = next_codepoint(p_, &i);
      pos_ = i;
      return one(cp);
    }
    return one(static_cast<unsigned char>(c));
  }

  Result<int32_t> parse_class() {
    // pos_ is after '['.
    bool negated = false;
    if (!at_end() && p_[pos_] == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<CodepointRange> ranges;
    bool first = true;
    while (true) {
      if (at_end()) return error("unterminated character class");
      if (p_[pos_] == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      // One item: a code point or an escape class.
      auto item = [&](bool* is_single) -> Result<std::vector<CodepointRange>> {
        *is_single = true;
        if (p_[pos_] == '\\') {
          ++pos_;
          STRATA_ASSIGN_OR_RETURN(auto r, parse_escape(true));
          *is_single = r.size() == 1 && r[0].lo == r[0].hi;
          return r;
        }
        size_t i = pos_;
        const uint32_t cp = next_codepoint(p_, &i);
        pos_ = i;
        return std::vector<CodepointRange>{{cp, cp}};
      };
      bool single_lo = false;
      STRATA_ASSIGN_OR_RETURN(auto lo, item(&single_lo));
      if (single_lo && pos_ + 1 < end_ && p_[pos_] == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        bool single_hi = false;
        STRATA_ASSIGN_OR_RETURN(auto hi, item(&single_hi));
        if (!single_hi) return error("bad character range");
        if (hi[0].lo < lo[0].lo) return error("bad character range");
        ranges.push_back({lo[0].lo, hi[0].lo});
        continue;
      }
      ranges.insert(ranges.end(), lo.begin(), lo.end());
    }
    ranges = normalize_ranges(std::move(ranges));
    if (negated) ranges = complement_ranges(ranges);
    return add_class(std::move(ranges));
  }

  Result<int32_t> parse_atom(int depth) {
    const char c = p_[pos_];
    switch (c) {
      case '(': {
        ++pos_;
        if (!at_end() && p_[pos_] == '?') {
          ++pos_;
          if (!at_end() && p_[pos_] == ':') {
            ++pos_;
          } else if (!at_end() && (p_[pos_] == 'P' || p_[pos_] == '<')) {
            if (p_[pos_] == 'P') ++pos_;
            if (at_end() || p_[pos_] != '<') return error("unsupported group syntax (?P");
            if (pos_ + 1 < end_ && (p_[pos_ + 1] == '=' || p_[pos_ + 1] == '!'))
              return error("lookbehind unsupported");
            while (!at_end() && p_[pos_] != '>') ++pos_;
            if (at_end()) return error("unterminated group name");
            ++pos_;
          } else {
            return error("unsupported group syntax (?");
          }
        }
        STRATA_ASSIGN_OR_RETURN(int32_t inner, parse_alt(depth + 1));
        if (at_end() || p_[pos_] != ')') return error("missing ')'");
        ++pos_;
        return inner;
      }
      case '[':
        ++pos_;
        return parse_class();
      case '.':
        ++pos_;
        return add_class(complement_ranges(normalize_ranges({{'\n', '\n'}})));
      case '\\': {
        ++pos_;
        STRATA_ASSIGN_OR_RETURN(auto r, parse_escape(false));
        return add_class(std::move(r));
      }
      case '*':
      case '+':
      case '?':
        return error("nothing to repeat");
      case '{': {
        int64_t m, n;
        const size_t save = pos_;
        if (read_braces(&m, &n)) {
          pos_ = save;
          return error("nothing to repeat");
        }
        ++pos_;
        return add_class({{'{', '{'}});
      }
      case '^':
        return error("anchor '^' inside the pattern unsupported");
      case '$':
        return error("anchor '$' inside the pattern unsupported");
      default: {
        size_t i = pos_;
        const uint32_t cp = next_codepoint(p_, &i);
        pos_ = i;
        return add_class({{cp, cp}});
      }
    }
  }

  std::string_view p_;
  const RegexLimits& lim_;
  size_t pos_ = 0, end_ = 0;
  std::vector<Ast> nodes_;
};

// Thompson construction with epsilon edges, then epsilon removal.
class NfaBuilder {
 public:
  NfaBuilder(const std::vector<Ast>& ast, const RegexLimits& l) : ast_(ast), lim_(l) {}

  Result<RegexNfa> build(int32_t root) {
    const int32_t start = state();
    STRATA_ASSIGN_OR_RETURN(int32_t end, build(root, start));
    return finish(start, end);
  }

 private:
  struct S {
    std::vector<int32_t> eps;
    std::vector<std::pair<int32_t, int32_t>> edges;  // (class index, to)
  };
  int32_t state() {
    s_.emplace_back();
    return static_cast<int32_t>(s_.size() - 1);
  }

  Result<int32_t> build(int32_t id, int32_t from) {
    if (static_cast<int64_t>(s_.size()) > lim_.max_states)
      return invalid_argument("regex: too large (over " + std::to_string(lim_.max_states) +
                              " states after expanding repetitions)");
    const Ast& a = ast_[id];
    switch (a.kind) {
      case Ast::kEmpty:
        return from;
      case Ast::kClass: {
        const int32_t to = state();
        if (!a.ranges.empty()) s_[from].edges.push_back({id, to});
        return to;
      }
      case Ast::kSeq: {
        int32_t cur = from;
        for (int32_t k : a.kids) {
          STRATA_ASSIGN_OR_RETURN(cur, build(k, cur));
        }
        return cur;
      }
      case Ast::kAlt: {
        const int32_t end = state();
        for (int32_t k : a.kids) {
          const int32_t s = state();
          s_[from].eps.push_back(s);
          STRATA_ASSIGN_OR_RETURN(int32_t e, build(k, s));
          s_[e].eps.push_back(end);
        }
        return end;
      }
      case Ast::kRepeat: {
        int32_t cur = from;
        for (int32_t i = 0; i < a.min; ++i) {
          const int32_t s = state();
          s_[cur].eps.push_back(s);
          STRATA_ASSIGN_OR_RETURN(cur, build(a.kids[0], s));
        }
        if (a.max < 0) {
          const int32_t loop = state();
          s_[cur].eps.push_back(loop);
          const int32_t s = state();
          s_[loop].eps.push_back(s);
          STRATA_ASSIGN_OR_RETURN(int32_t e, build(a.kids[0], s));
          s_[e].eps.push_back(loop);
          return loop;
        }
        const int32_t end = state();
        s_[cur].eps.push_back(end);
        for (int32_t i = a.min; i < a.max; ++i) {
          const int32_t s = state();
          s_[cur].eps.push_back(s);
          STRATA_ASSIGN_OR_RETURN(cur, build(a.kids[0], s));
          s_[cur].eps.push_back(end);
        }
        return end;
      }
    }
    return from;
  }

  RegexNfa finish(int32_t start, int32_t end) {
    const int32_t n = static_cast<int32_t>(s_.size());
    std::vector<int32_t> mark(n, -1), closure, id(n, -1), order = {start};
    id[start] = 0;
    RegexNfa out;
    std::vector<std::map<int32_t, std::vector<CodepointRange>>> by_target;
    for (size_t i = 0; i < order.size(); ++i) {
      const int32_t v = order[i];
      closure.assign(1, v);
      mark[v] = v;
      for (size_t k = 0; k < closure.size(); ++k)
        for (int32_t w : s_[closure[k]].eps)
          if (mark[w] != v) {
            mark[w] = v;
            closure.push_back(w);
          }
      by_target.emplace_back();
      for (int32_t c : closure) {
        if (c == end) out.finals.push_back(static_cast<int32_t>(i));
        for (const auto& [cls, to] : s_[c].edges) {
          if (id[to] < 0) {
            id[to] = static_cast<int32_t>(order.size());
            order.push_back(to);
          }
          auto& r = by_target[i][id[to]];
          r.insert(r.end(), ast_[cls].ranges.begin(), ast_[cls].ranges.end());
        }
      }
    }
    out.num_states = static_cast<int32_t>(order.size());
    out.start = 0;
    for (int32_t i = 0; i < out.num_states; ++i)
      for (auto& [to, r] : by_target[i]) out.edges.push_back({i, to, normalize_ranges(r)});
    return out;
  }

  const std::vector<Ast>& ast_;
  const RegexLimits& lim_;
  std::vector<S> s_;
};

}  // namespace

Result<RegexNfa> parse_regex(std::string_view pattern, const RegexLimits& limits) {
  Parser parser(pattern, limits);
  STRATA_ASSIGN_OR_RETURN(int32_t root, parser.parse());
  return NfaBuilder(parser.nodes(), limits).build(root);
}

Result<int32_t> emit_regex(
    Grammar* g, const RegexNfa& nfa, int32_t min_chars, int32_t max_chars,
    const std::function<int32_t(Grammar*, const std::vector<CodepointRange>&)>& unit,
    const RegexLimits& limits) {
  if (max_chars >= 0 && max_chars < min_chars) return g->alt({});
  // Product states (q, k): k characters read so far, saturating at
  // min_chars when there is no maximum.
  const bool counted = min_chars > 0 || max_chars >= 0;
  const int32_t cap = max_chars >= 0 ? max_chars : min_chars;
  std::map<std::pair<int32_t, int32_t>, int32_t> id;
  std::vector<std::pair<int32_t, int32_t>> order;
  struct E {
    int32_t from, to, nfa_edge;
  };
  std::vector<E> edges;
  std::vector<std::vector<int32_t>> out_edges(nfa.num_states);
  for (size_t i = 0; i < nfa.edges.size(); ++i) out_edges[nfa.edges[i].from].push_back(i);
  auto get = [&](int32_t q, int32_t k) {
    auto [it, inserted] = id.emplace(std::make_pair(q, k), static_cast<int32_t>(order.size()));
    if (inserted) order.emplace_back(q, k);
    return it->second;
  };
  get(nfa.start, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    if (static_cast<int64_t>(order.size()) > limits.max_states)
      return invalid_argument("regex: too large with its length bounds (over " +
                              std::to_string(limits.max_states) + " states)");
    const auto [q, k] = order[i];
    for (int32_t e : out_edges[q]) {
      int32_t k2 = counted ? k + 1 : 0;
      if (max_chars >= 0 && k2 > max_chars) continue;
      if (max_chars < 0) k2 = std::min(k2, cap);
      edges.push_back({static_cast<int32_t>(i), get(nfa.edges[e].to, k2), e});
    }
  }
  const int32_t n = static_cast<int32_t>(order.size());
  std::vector<bool> is_final(n, false);
  for (int32_t i = 0; i < n; ++i) {
    const auto [q, k] = order[i];
    if (std::find(nfa.finals.begin(), nfa.finals.end(), q) != nfa.finals.end() && k >= min_chars)
      is_final[i] = true;
  }
  // Keep only states that can still reach a final one: a dead end would let
  // the matcher accept text it can never finish.
  std::vector<std::vector<int32_t>> rev(n);
  for (const auto& e : edges) rev[e.to].push_back(e.from);
  std::vector<bool> live(n, false);
  std::vector<int32_t> work;
  for (int32_t i = 0; i < n; ++i)
    if (is_final[i]) {
      live[i] = true;
      work.push_back(i);
    }
  while (!work.empty()) {
    const int32_t v = work.back();
    work.pop_back();
    for (int32_t u : rev[v])
      if (!live[u]) {
        live[u] = true;
        work.push_back(u);
      }
  }
  if (!live[0]) return g->alt({});
  std::vector<int32_t> remap(n, -1);
  Automaton a;
  for (int32_t i = 0; i < n; ++i)
    if (live[i]) remap[i] = a.num_states++;
  a.start = remap[0];
  for (int32_t i = 0; i < n; ++i)
    if (is_final[i]) a.finals.push_back(remap[i]);
  std::map<int32_t, int32_t> unit_of;  // nfa edge -> expr
  for (const auto& e : edges) {
    if (!live[e.from] || !live[e.to]) continue;
    auto it = unit_of.find(e.nfa_edge);
    if (it == unit_of.end()) {
      const auto& r = nfa.edges[e.nfa_edge].ranges;
      const int32_t x = unit ? unit(g, r) : g->char_class(r);
      it = unit_of.emplace(e.nfa_edge, x).first;
    }
    a.edges.push_back({remap[e.from], remap[e.to], it->second});
  }
  return g->automaton(std::move(a));
}

Result<Grammar> grammar_from_regex(std::string_view pattern) {
  STRATA_ASSIGN_OR_RETURN(RegexNfa nfa, parse_regex(pattern));
  Grammar g;
  const int32_t root = g.add_rule("root");
  STRATA_ASSIGN_OR_RETURN(int32_t body, emit_regex(&g, nfa));
  g.set_body(root, body);
  g.set_root(root);
  return g;
}

}  // namespace strata
