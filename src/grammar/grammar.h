// Grammar: the intermediate form every front end (JSON Schema, regex, GBNF,
// choice, any-JSON) produces and GrammarCompiler turns into a byte-level
// pushdown automaton.
//
// A grammar is a set of named rules; each rule's body is one expression tree
// stored in an arena (ids index exprs()). Terminals are byte strings and
// Unicode code point classes (compiled to UTF-8 later), so every front end
// speaks in characters and the matcher in bytes. Rule references may be
// recursive (right or nested recursion); left recursion is rejected when
// compiling, because a pushdown automaton walking bytes cannot terminate its
// closure on it.
//
// A plain value, built once by one thread, read-only afterwards.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata {

// Inclusive code point range.
struct CodepointRange {
  uint32_t lo = 0;
  uint32_t hi = 0;
};

enum class ExprKind : uint8_t {
  kEmpty,      // matches ""
  kBytes,      // a literal byte string
  kCharClass,  // one code point from `ranges` (UTF-8 encoded)
  kSeq,        // children in order
  kAlt,        // one of the children
  kRepeat,     // child repeated min..max times (max < 0: unbounded)
  kRuleRef,    // the body of rule `rule`
  kAutomaton,  // automaton(rule): an NFA whose edges read sub-expressions
};

// A finite automaton whose edges each match one sub-expression (a character,
// usually): regexes with length bounds lower to these (the product of the
// regex NFA and a length counter). Labels must not match the empty string.
struct Automaton {
  struct Edge {
    int32_t from, to, expr;
  };
  int32_t num_states = 0;
  int32_t start = 0;
  std::vector<int32_t> finals;
  std::vector<Edge> edges;
};

struct Expr {
  ExprKind kind = ExprKind::kEmpty;
  std::string bytes;                   // kBytes
  std::vector<CodepointRange> ranges;  // kCharClass: sorted, disjoint, non-adjacent
  std::vector<int32_t> children;       // kSeq, kAlt; kRepeat has one
  int32_t min = 0, max = -1;           // kRepeat
  int32_t rule = -1;                   // kRuleRef; kAutomaton: automata() index
};

class Grammar {
 public:
  static constexpr uint32_t kMaxCodepoint = 0x10FFFF;

  // Declares a rule (body set later, so rules can refer to each other).
  int32_t add_rule(std::string name);
  void set_body(int32_t rule, int32_t expr);
  // Finds a declared rule by name, or -1.
  int32_t find_rule(std::string_view name) const;

  int32_t empty();
  int32_t bytes(std::string_view literal);
  // A class of code points; `negated` takes the complement within
  // [0, 0x10FFFF] minus the surrogates. Ranges may be unsorted/overlapping.
  int32_t char_class(std::vector<CodepointRange> ranges, bool negated = false);
  int32_t seq(std::vector<int32_t> children);
  int32_t alt(std::vector<int32_t> children);
  int32_t repeat(int32_t child, int32_t min, int32_t max);
  int32_t optional(int32_t child) { return repeat(child, 0, 1); }
  int32_t star(int32_t child) { return repeat(child, 0, -1); }
  int32_t plus(int32_t child) { return repeat(child, 1, -1); }
  int32_t ref(int32_t rule);
  int32_t automaton(Automaton a);

  void set_root(int32_t rule) { root_ = rule; }
  int32_t root() const { return root_; }

  int32_t num_rules() const { return static_cast<int32_t>(rule_names_.size()); }
  const std::string& rule_name(int32_t rule) const { return rule_names_[rule]; }
  int32_t rule_body(int32_t rule) const { return rule_bodies_[rule]; }
  const Expr& expr(int32_t id) const { return exprs_[id]; }
  int32_t num_exprs() const { return static_cast<int32_t>(exprs_.size()); }
  const Automaton& automaton_at(int32_t i) const { return automata_[i]; }

  // GBNF-like text, for error messages and tests.
  std::string to_string() const;

 private:
  int32_t push(Expr e);

  std::vector<Expr> exprs_;
  std::vector<Automaton> automata_;
  std::vector<std::string> rule_names_;
  std::vector<int32_t> rule_bodies_;  // -1 until set
  int32_t root_ = -1;
};

// Normalizes ranges: sorted, merged (overlapping or adjacent), clipped to
// [0, 0x10FFFF].
std::vector<CodepointRange> normalize_ranges(std::vector<CodepointRange> ranges);
// The complement of normalized ranges within [0, 0x10FFFF], surrogates excluded.
std::vector<CodepointRange> complement_ranges(const std::vector<CodepointRange>& ranges);

}  // namespace strata
