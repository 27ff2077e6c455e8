// CompiledGrammar: a Grammar lowered to a byte-level pushdown automaton, the
// form the matcher walks.
//
// Every rule becomes an epsilon-free NFA over bytes whose edges either read a
// byte range or call another rule (push a return position, enter the callee's
// start). A "position" is one global NFA node id; a matcher stack is a chain
// of positions (top = where the next byte is read; below = where each caller
// resumes). Small non-recursive rules are inlined into their callers at
// compile time, which makes most positions' token masks independent of the
// stack below them (see TokenMaskCache). The root is wrapped in a rule that
// nothing calls, so popping its frame always means "the grammar is done".
//
// Immutable after compile(); share it freely between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar.h"
#include "util/status.h"

namespace strata {

struct CompileOptions {
  // Upper bound on NFA nodes; larger grammars (usually huge {m,n} counts)
  // fail with kResourceExhausted instead of exhausting memory.
  int32_t max_nodes = 1 << 20;
  // A non-recursive rule whose expanded size is at most this many expression
  // nodes is inlined into each caller.
  int32_t inline_limit = 4096;
};

class CompiledGrammar {
 public:
  struct ByteEdge {
    uint8_t lo, hi;  // inclusive byte range
    int32_t to;      // position
  };
  struct CallEdge {
    int32_t rule;  // callee
    int32_t to;    // return position in the caller
  };
  struct Node {
    int32_t rule = 0;
    bool is_final = false;  // the rule may end here (pop)
    uint32_t byte_begin = 0, byte_end = 0;
    uint32_t call_begin = 0, call_end = 0;
  };

  static Result<std::shared_ptr<const CompiledGrammar>> compile(const Grammar& grammar,
                                                                const CompileOptions& options = {});

  int32_t num_positions() const { return static_cast<int32_t>(nodes_.size()); }
  int32_t num_rules() const { return static_cast<int32_t>(rule_start_.size()); }
  const Node& node(int32_t pos) const { return nodes_[pos]; }
  const ByteEdge* byte_begin(int32_t pos) const {
    return byte_edges_.data() + nodes_[pos].byte_begin;
  }
  const ByteEdge* byte_end(int32_t pos) const { return byte_edges_.data() + nodes_[pos].byte_end; }
  const CallEdge* call_begin(int32_t pos) const {
    return call_edges_.data() + nodes_[pos].call_begin;
  }
  const CallEdge* call_end(int32_t pos) const { return call_edges_.data() + nodes_[pos].call_end; }
  bool has_byte_edges(int32_t pos) const { return nodes_[pos].byte_begin != nodes_[pos].byte_end; }
  int32_t rule_start(int32_t rule) const { return rule_start_[rule]; }
  const std::string& rule_name(int32_t rule) const { return rule_names_[rule]; }
  // The wrapper rule; nothing calls it.
  int32_t root_rule() const { return root_rule_; }
  int32_t root_start() const { return rule_start_[root_rule_]; }

 private:
  friend class GrammarCompiler;
  std::vector<Node> nodes_;
  std::vector<ByteEdge> byte_edges_;
  std::vector<CallEdge> call_edges_;
  std::vector<int32_t> rule_start_;
  std::vector<std::string> rule_names_;
  int32_t root_rule_ = 0;
};

// UTF-8 byte-range sequences that together match exactly the code points in
// [lo, hi] (surrogates excluded). Each sequence is 1-4 inclusive byte ranges.
std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_sequences(uint32_t lo, uint32_t hi);

}  // namespace strata
