#include "grammar/grammar.h"

#include <algorithm>
#include <cstdio>

namespace strata {

std::vector<CodepointRange> normalize_ranges(std::vector<CodepointRange> ranges) {
  std::vector<CodepointRange> out;
  for (auto& r : ranges) {
    if (r.lo > r.hi) std::swap(r.lo, r.hi);
    r.hi = std::min(r.hi, Grammar::kMaxCodepoint);
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const CodepointRange& a, const CodepointRange& b) { return a.lo < b.lo; });
  for (const auto& r : ranges) {
    if (r.lo > Grammar::kMaxCodepoint) continue;
    if (!out.empty() && r.lo <= out.back().hi + 1) {
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges) {
  std::vector<CodepointRange> out;
  uint32_t next = 0;
  for (const auto& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= Grammar::kMaxCodepoint) out.push_back({next, Grammar::kMaxCodepoint});
  // Surrogates are not characters; UTF-8 cannot carry them.
  std::vector<CodepointRange> clipped;
  for (const auto& r : out) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      clipped.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) clipped.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) clipped.push_back({0xE000, r.hi});
  }
  return clipped;
}

int32_t Grammar::push(Expr e) {
  exprs_.push_back(std::move(e));
  return static_cast<int32_t>(exprs_.size() - 1);
}

int32_t Grammar::add_rule(std::string name) {
  rule_names_.push_back(std::move(name));
  rule_bodies_.push_back(-1);
  return static_cast<int32_t>(rule_names_.size() - 1);
}

void Grammar::set_body(int32_t rule, int32_t expr) {
  rule_bodies_[rule] = expr;
}

int32_t Grammar::find_rule(std::string_view name) const {
  for (size_t i = 0; i < rule_names_.size(); ++i) {
    if (rule_names_[i] == name) return static_cast<int32_t>(i);
  }
  return -1;
}

int32_t Grammar::empty() {
  return push(Expr{});
}

int32_t Grammar::bytes(std::string_view literal) {
  if (literal.empty()) return empty();
  Expr e;
  e.kind = ExprKind::kBytes;
  e.bytes = std::string(literal);
  return push(std::move(e));
}

int32_t Grammar::char_class(std::vector<CodepointRange> ranges, bool negated) {
  Expr e;
  e.kind = ExprKind::kCharClass;
  e.ranges = normalize_ranges(std::move(ranges));
  if (negated) e.ranges = complement_ranges(e.ranges);
  return push(std::move(e));
}

int32_t Grammar::seq(std::vector<int32_t> children) {
  if (children.empty()) return empty();
  if (children.size() == 1) return children[0];
  Expr e;
  e.kind = ExprKind::kSeq;
  e.children = std::move(children);
  return push(std::move(e));
}

int32_t Grammar::alt(std::vector<int32_t> children) {
  if (children.size() == 1) return children[0];
  Expr e;
  e.kind = ExprKind::kAlt;  // no children: matches nothing
  e.children = std::move(children);
  return push(std::move(e));
}

int32_t Grammar::repeat(int32_t child, int32_t min, int32_t max) {
  if (min == 1 && max == 1) return child;
  Expr e;
  e.kind = ExprKind::kRepeat;
  e.children = {child};
  e.min = min;
  e.max = max;
  return push(std::move(e));
}

int32_t Grammar::ref(int32_t rule) {
  Expr e;
  e.kind = ExprKind::kRuleRef;
  e.rule = rule;
  return push(std::move(e));
}

int32_t Grammar::automaton(Automaton a) {
  automata_.push_back(std::move(a));
  Expr e;
  e.kind = ExprKind::kAutomaton;
  e.rule = static_cast<int32_t>(automata_.size() - 1);
  return push(std::move(e));
}

namespace {

void append_codepoint(std::string* out, uint32_t cp) {
  if (cp == '\\' || cp == ']' || cp == '-' || cp == '^') {
    out->push_back('\\');
    out->push_back(static_cast<char>(cp));
  } else if (cp >= 0x20 && cp < 0x7F) {
    out->push_back(static_cast<char>(cp));
  } else {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\U%08X", cp);
    *out += buf;
  }
}

void print_expr(const Grammar& g, int32_t id, std::string* out) {
  const Expr& e = g.expr(id);
  switch (e.kind) {
    case ExprKind::kEmpty:
      *out += "\"\"";
      break;
    case ExprKind::kBytes:
      out->push_back('"');
      for (unsigned char c : e.bytes) {
        if (c == '"' || c == '\\') {
          out->push_back('\\');
          out->push_back(static_cast<char>(c));
        } else if (c >= 0x20 && c < 0x7F) {
          out->push_back(static_cast<char>(c));
        } else {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02X", c);
          *out += buf;
        }
      }
      out->push_back('"');
      break;
    case ExprKind::kCharClass:
      out->push_back('[');
      for (const auto& r : e.ranges) {
        append_codepoint(out, r.lo);
        if (r.hi != r.lo) {
          out->push_back('-');
          append_codepoint(out, r.hi);
        }
      }
      out->push_back(']');
      break;
    case ExprKind::kSeq:
    case ExprKind::kAlt:
      out->push_back('(');
      for (size_t i = 0; i < e.children.size(); ++i) {
        if (i > 0) *out += e.kind == ExprKind::kSeq ? " " : " | ";
        print_expr(g, e.children[i], out);
      }
      out->push_back(')');
      break;
    case ExprKind::kRepeat:
      print_expr(g, e.children[0], out);
      *out += "{" + std::to_string(e.min) + "," + (e.max < 0 ? "" : std::to_string(e.max)) + "}";
      break;
    case ExprKind::kRuleRef:
      *out += g.rule_name(e.rule);
      break;
    case ExprKind::kAutomaton: {
      const Automaton& a = g.automaton_at(e.rule);
      *out += "<automaton " + std::to_string(a.num_states) + " states:";
      for (const auto& edge : a.edges) {
        *out += " " + std::to_string(edge.from) + "->" + std::to_string(edge.to) + " ";
        print_expr(g, edge.expr, out);
      }
      *out += ">";
      break;
    }
  }
}

}  // namespace

std::string Grammar::to_string() const {
  std::string out;
  for (int32_t r = 0; r < num_rules(); ++r) {
    out += rule_names_[r] + " ::= ";
    if (rule_bodies_[r] >= 0) print_expr(*this, rule_bodies_[r], &out);
    out += "\n";
  }
  return out;
}

}  // namespace strata
