#include "grammar/compiled_grammar.h"

#include <algorithm>
#include <functional>

namespace strata {

namespace {

void encode_utf8(uint32_t cp, uint8_t* out, int n) {
  if (n == 1) {
    out[0] = static_cast<uint8_t>(cp);
  } else if (n == 2) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  } else if (n == 3) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  } else {
    out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  }
}

// [lo, hi] share one encoded length n; split until every byte position of
// the encodings spans a plain range.
void split_same_length(uint32_t lo, uint32_t hi, int n,
                       std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        split_same_length(lo, lo | m, n, out);
        split_same_length((lo | m) + 1, hi, n, out);
        return;
      }
      if ((hi & m) != m) {
        split_same_length(lo, (hi & ~m) - 1, n, out);
        split_same_length(hi & ~m, hi, n, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  encode_utf8(lo, a, n);
  encode_utf8(hi, b, n);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(a[i], b[i]);
  out->push_back(std::move(seq));
}

}  // namespace

std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_sequences(uint32_t lo, uint32_t hi) {
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> out;
  static const uint32_t kBounds[][3] = {{0, 0x7F, 1},
                                        {0x80, 0x7FF, 2},
                                        {0x800, 0xD7FF, 3},
                                        {0xE000, 0xFFFF, 3},
                                        {0x10000, 0x10FFFF, 4}};
  for (const auto& b : kBounds) {
    const uint32_t l = std::max(lo, b[0]), h = std::min(hi, b[1]);
    if (l <= h) split_same_length(l, h, static_cast<int>(b[2]), &out);
  }
  return out;
}

// Lowers a Grammar: rule analysis (nullable, left recursion, recursion,
// inlining), Thompson construction per rule, epsilon removal.
class GrammarCompiler {
 public:
  GrammarCompiler(const Grammar& g, const CompileOptions& o) : g_(g), opt_(o) {}

  Result<std::shared_ptr<const CompiledGrammar>> run() {
    if (g_.root() < 0) return invalid_argument("grammar: no root rule");
    for (int32_t r = 0; r < g_.num_rules(); ++r) {
      if (g_.rule_body(r) < 0) {
        return invalid_argument("grammar: rule '" + g_.rule_name(r) + "' is used but not defined");
      }
    }
    STRATA_RETURN_IF_ERROR(check_left_recursion());
    find_recursive_rules();
    compute_inlining();

    auto out = std::make_shared<CompiledGrammar>();
    out_ = out.get();
    // Rules that survive as calls get numbers; the wrapper root is rule 0.
    rule_id_.assign(g_.num_rules(), -1);
    out_->rule_names_.push_back("$root");
    out_->rule_start_.push_back(-1);
    std::vector<int32_t> pending = {-1};  // -1: the wrapper
    for (size_t i = 0; i < pending.size(); ++i) {
      const int32_t src = pending[i];
      STRATA_RETURN_IF_ERROR(lower_rule(static_cast<int32_t>(i), src, &pending));
    }
    STRATA_RETURN_IF_ERROR(prune_dead_ends());
    return std::shared_ptr<const CompiledGrammar>(std::move(out));
  }

 private:
  struct TNode {
    std::vector<CompiledGrammar::ByteEdge> bytes;
    std::vector<CompiledGrammar::CallEdge> calls;  // `rule` is a source rule until lowered
    std::vector<int32_t> eps;
  };

  // --- analysis -------------------------------------------------------

  bool nullable_expr(int32_t id) const {
    const Expr& e = g_.expr(id);
    switch (e.kind) {
      case ExprKind::kEmpty:
        return true;
      case ExprKind::kBytes:
      case ExprKind::kCharClass:
        return false;
      case ExprKind::kSeq:
        for (int32_t c : e.children)
          if (!nullable_expr(c)) return false;
        return true;
      case ExprKind::kAlt:
        for (int32_t c : e.children)
          if (nullable_expr(c)) return true;
        return false;
      case ExprKind::kRepeat:
        return e.min == 0 || nullable_expr(e.children[0]);
      case ExprKind::kRuleRef:
        return nullable_[e.rule];
      case ExprKind::kAutomaton: {
        const Automaton& a = g_.automaton_at(e.rule);
        return std::find(a.finals.begin(), a.finals.end(), a.start) != a.finals.end();
      }
    }
    return false;
  }

  void left_refs(int32_t id, std::vector<int32_t>* out) const {
    const Expr& e = g_.expr(id);
    switch (e.kind) {
      case ExprKind::kSeq:
        for (int32_t c : e.children) {
          left_refs(c, out);
          if (!nullable_expr(c)) break;
        }
        break;
      case ExprKind::kAlt:
        for (int32_t c : e.children) left_refs(c, out);
        break;
      case ExprKind::kRepeat:
        if (e.max != 0) left_refs(e.children[0], out);
        break;
      case ExprKind::kRuleRef:
        out->push_back(e.rule);
        break;
      case ExprKind::kAutomaton:
        for (const auto& edge : g_.automaton_at(e.rule).edges)
          if (edge.from == g_.automaton_at(e.rule).start) left_refs(edge.expr, out);
        break;
      default:
        break;
    }
  }

  void all_refs(int32_t id, std::vector<int32_t>* out) const {
    const Expr& e = g_.expr(id);
    if (e.kind == ExprKind::kRuleRef) out->push_back(e.rule);
    if (e.kind == ExprKind::kAutomaton)
      for (const auto& edge : g_.automaton_at(e.rule).edges) all_refs(edge.expr, out);
    for (int32_t c : e.children) all_refs(c, out);
  }

  Status check_left_recursion() {
    const int32_t n = g_.num_rules();
    nullable_.assign(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (int32_t r = 0; r < n; ++r) {
        if (!nullable_[r] && nullable_expr(g_.rule_body(r))) nullable_[r] = changed = true;
      }
    }
    std::vector<std::vector<int32_t>> edges(n);
    for (int32_t r = 0; r < n; ++r) left_refs(g_.rule_body(r), &edges[r]);
    // 0 unvisited, 1 on the DFS path, 2 done.
    std::vector<int8_t> state(n, 0);
    std::string cycle_rule;
    std::function<bool(int32_t)> dfs = [&](int32_t r) {
      state[r] = 1;
      for (int32_t s : edges[r]) {
        if (state[s] == 1) {
          cycle_rule = g_.rule_name(s);
          return true;
        }
        if (state[s] == 0 && dfs(s)) return true;
      }
      state[r] = 2;
      return false;
    };
    for (int32_t r = 0; r < n; ++r) {
      if (state[r] == 0 && dfs(r)) {
        return invalid_argument("grammar: rule '" + cycle_rule +
                                "' is left-recursive (rewrite it with repetition)");
      }
    }
    return Status::ok();
  }

  // Tarjan's SCCs on the full reference graph: a rule is recursive when its
  // SCC has more than one rule or it refers to itself.
  void find_recursive_rules() {
    const int32_t n = g_.num_rules();
    std::vector<std::vector<int32_t>> edges(n);
    for (int32_t r = 0; r < n; ++r) all_refs(g_.rule_body(r), &edges[r]);
    recursive_.assign(n, false);
    std::vector<int32_t> index(n, -1), low(n, 0), stack;
    std::vector<bool> on_stack(n, false);
    int32_t counter = 0;
    std::function<void(int32_t)> strong = [&](int32_t v) {
      index[v] = low[v] = counter++;
      stack.push_back(v);
      on_stack[v] = true;
      for (int32_t w : edges[v]) {
        if (index[w] < 0) {
          strong(w);
          low[v] = std::min(low[v], low[w]);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
      }
      if (low[v] == index[v]) {
        std::vector<int32_t> scc;
        int32_t w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = false;
          scc.push_back(w);
        } while (w != v);
        const bool self = std::find(edges[v].begin(), edges[v].end(), v) != edges[v].end();
        if (scc.size() > 1 || self)
          for (int32_t s : scc) recursive_[s] = true;
      }
    };
    for (int32_t r = 0; r < n; ++r)
      if (index[r] < 0) strong(r);
  }

  int64_t expr_size(int32_t id) {
    const Expr& e = g_.expr(id);
    int64_t s = 1;
    switch (e.kind) {
      case ExprKind::kBytes:
        s = static_cast<int64_t>(e.bytes.size());
        break;
      case ExprKind::kCharClass:
        s = static_cast<int64_t>(e.ranges.size()) * 2;
        break;
      case ExprKind::kSeq:
      case ExprKind::kAlt:
        for (int32_t c : e.children) s += expr_size(c);
        break;
      case ExprKind::kRepeat:
        s = expr_size(e.children[0]) * std::max<int64_t>(1, std::max(e.min, e.max));
        break;
      case ExprKind::kRuleRef:
        s = rule_size(e.rule);
        break;
      case ExprKind::kAutomaton:
        s = g_.automaton_at(e.rule).num_states;
        for (const auto& edge : g_.automaton_at(e.rule).edges) s += expr_size(edge.expr);
        break;
      default:
        break;
    }
    return std::min<int64_t>(s, int64_t{1} << 40);
  }

  int64_t rule_size(int32_t r) {
    if (recursive_[r]) return 1;
    if (size_[r] < 0) {
      size_[r] = int64_t{1} << 40;  // guard; non-recursive rules never revisit
      size_[r] = expr_size(g_.rule_body(r));
    }
    return inline_[r] ? size_[r] : 1;
  }

  void compute_inlining() {
    const int32_t n = g_.num_rules();
    size_.assign(n, -1);
    inline_.assign(n, true);  // provisional while sizes are measured
    for (int32_t r = 0; r < n; ++r) {
      if (recursive_[r]) {
        inline_[r] = false;
        continue;
      }
    }
    for (int32_t r = 0; r < n; ++r) {
      if (!recursive_[r]) {
        rule_size(r);
        inline_[r] = size_[r] <= opt_.inline_limit;
      }
    }
  }

  // --- construction ---------------------------------------------------

  int32_t new_node() {
    t_.emplace_back();
    return static_cast<int32_t>(t_.size() - 1);
  }

  Status check_size() const {
    if (static_cast<int64_t>(t_.size()) + static_cast<int64_t>(out_->nodes_.size()) >
        opt_.max_nodes) {
      return Status(StatusCode::kResourceExhausted,
                    "grammar: too large (more than " + std::to_string(opt_.max_nodes) +
                        " automaton states; lower repetition counts such as maxLength)");
    }
    return Status::ok();
  }

  Result<int32_t> build(int32_t id, int32_t from, int depth) {
    if (depth > 2000) return invalid_argument("grammar: expressions nested too deeply");
    STRATA_RETURN_IF_ERROR(check_size());
    const Expr& e = g_.expr(id);
    switch (e.kind) {
      case ExprKind::kEmpty:
        return from;
      case ExprKind::kBytes: {
        int32_t cur = from;
        for (unsigned char c : e.bytes) {
          const int32_t next = new_node();
          t_[cur].bytes.push_back({c, c, next});
          cur = next;
        }
        return cur;
      }
      case ExprKind::kCharClass: {
        const int32_t end = new_node();
        for (const auto& r : e.ranges) {
          for (const auto& seq : utf8_sequences(r.lo, r.hi)) {
            int32_t cur = from;
            for (size_t i = 0; i < seq.size(); ++i) {
              const int32_t next = i + 1 == seq.size() ? end : new_node();
              t_[cur].bytes.push_back({seq[i].first, seq[i].second, next});
              cur = next;
            }
          }
        }
        return end;
      }
      case ExprKind::kSeq: {
        int32_t cur = from;
        for (int32_t c : e.children) {
          STRATA_ASSIGN_OR_RETURN(cur, build(c, cur, depth + 1));
        }
        return cur;
      }
      case ExprKind::kAlt: {
        const int32_t end = new_node();
        for (int32_t c : e.children) {
          const int32_t start = new_node();
          t_[from].eps.push_back(start);
          STRATA_ASSIGN_OR_RETURN(int32_t last, build(c, start, depth + 1));
          t_[last].eps.push_back(end);
        }
        return end;
      }
      case ExprKind::kRepeat: {
        const int32_t child = e.children[0];
        int32_t cur = from;
        for (int32_t i = 0; i < e.min; ++i) {
          const int32_t start = new_node();
          t_[cur].eps.push_back(start);
          STRATA_ASSIGN_OR_RETURN(cur, build(child, start, depth + 1));
        }
        if (e.max < 0) {
          const int32_t loop = new_node();
          t_[cur].eps.push_back(loop);
          const int32_t start = new_node();
          t_[loop].eps.push_back(start);
          STRATA_ASSIGN_OR_RETURN(int32_t last, build(child, start, depth + 1));
          t_[last].eps.push_back(loop);
          return loop;
        }
        const int32_t end = new_node();
        t_[cur].eps.push_back(end);
        for (int32_t i = e.min; i < e.max; ++i) {
          const int32_t start = new_node();
          t_[cur].eps.push_back(start);
          STRATA_ASSIGN_OR_RETURN(cur, build(child, start, depth + 1));
          t_[cur].eps.push_back(end);
        }
        return end;
      }
      case ExprKind::kAutomaton: {
        const Automaton& a = g_.automaton_at(e.rule);
        const int32_t first = static_cast<int32_t>(t_.size());
        for (int32_t i = 0; i < a.num_states; ++i) new_node();
        t_[from].eps.push_back(first + a.start);
        for (const auto& edge : a.edges) {
          STRATA_RETURN_IF_ERROR(check_size());
          const int32_t start = new_node();
          t_[first + edge.from].eps.push_back(start);
          STRATA_ASSIGN_OR_RETURN(int32_t last, build(edge.expr, start, depth + 1));
          t_[last].eps.push_back(first + edge.to);
        }
        const int32_t end = new_node();
        for (int32_t f : a.finals) t_[first + f].eps.push_back(end);
        return end;
      }
      case ExprKind::kRuleRef: {
        if (inline_[e.rule]) return build(g_.rule_body(e.rule), from, depth + 1);
        const int32_t end = new_node();
        t_[from].calls.push_back({e.rule, end});
        return end;
      }
    }
    return from;
  }

  int32_t called_rule_id(int32_t src_rule, std::vector<int32_t>* pending) {
    if (rule_id_[src_rule] < 0) {
      rule_id_[src_rule] = static_cast<int32_t>(out_->rule_start_.size());
      out_->rule_start_.push_back(-1);
      out_->rule_names_.push_back(g_.rule_name(src_rule));
      pending->push_back(src_rule);
    }
    return rule_id_[src_rule];
  }

  // Builds rule `dst` (from source rule `src`, or the wrapper when -1) and
  // appends its epsilon-free nodes to the output.
  Status lower_rule(int32_t dst, int32_t src, std::vector<int32_t>* pending) {
    t_.clear();
    const int32_t start = new_node();
    int32_t final_node;
    STRATA_ASSIGN_OR_RETURN(final_node,
                            src < 0 ? build_wrapper(start) : build(g_.rule_body(src), start, 0));
    // Epsilon closures.
    const int32_t n = static_cast<int32_t>(t_.size());
    std::vector<int32_t> mark(n, -1), closure;
    std::vector<int32_t> new_id(n, -1), order;
    auto close = [&](int32_t v) {
      closure.clear();
      closure.push_back(v);
      mark[v] = v;
      for (size_t i = 0; i < closure.size(); ++i) {
        for (int32_t w : t_[closure[i]].eps) {
          if (mark[w] != v) {
            mark[w] = v;
            closure.push_back(w);
          }
        }
      }
    };
    // Keep nodes reachable through non-epsilon edges from start.
    const int32_t base = static_cast<int32_t>(out_->nodes_.size());
    new_id[start] = 0;
    order.push_back(start);
    struct Pending {
      std::vector<CompiledGrammar::ByteEdge> bytes;
      std::vector<CompiledGrammar::CallEdge> calls;
      bool is_final;
    };
    std::vector<Pending> built;
    for (size_t i = 0; i < order.size(); ++i) {
      close(order[i]);
      Pending p{{}, {}, false};
      for (int32_t c : closure) {
        if (c == final_node) p.is_final = true;
        for (const auto& b : t_[c].bytes) p.bytes.push_back(b);
        for (const auto& k : t_[c].calls) p.calls.push_back(k);
      }
      auto target = [&](int32_t v) {
        if (new_id[v] < 0) {
          new_id[v] = static_cast<int32_t>(order.size());
          order.push_back(v);
        }
        return base + new_id[v];
      };
      for (auto& b : p.bytes) b.to = target(b.to);
      for (auto& k : p.calls) {
        k.to = target(k.to);
        k.rule = called_rule_id(k.rule, pending);
      }
      std::sort(p.bytes.begin(), p.bytes.end(), [](const auto& a, const auto& b) {
        return a.lo != b.lo ? a.lo < b.lo : (a.hi != b.hi ? a.hi < b.hi : a.to < b.to);
      });
      p.bytes.erase(std::unique(p.bytes.begin(), p.bytes.end(),
                                [](const auto& a, const auto& b) {
                                  return a.lo == b.lo && a.hi == b.hi && a.to == b.to;
                                }),
                    p.bytes.end());
      built.push_back(std::move(p));
      if (static_cast<int64_t>(base) + static_cast<int64_t>(order.size()) > opt_.max_nodes) {
        return check_size_exceeded();
      }
    }
    out_->rule_start_[dst] = base;
    for (auto& p : built) {
      CompiledGrammar::Node node;
      node.rule = dst;
      node.is_final = p.is_final;
      node.byte_begin = static_cast<uint32_t>(out_->byte_edges_.size());
      out_->byte_edges_.insert(out_->byte_edges_.end(), p.bytes.begin(), p.bytes.end());
      node.byte_end = static_cast<uint32_t>(out_->byte_edges_.size());
      node.call_begin = static_cast<uint32_t>(out_->call_edges_.size());
      out_->call_edges_.insert(out_->call_edges_.end(), p.calls.begin(), p.calls.end());
      node.call_end = static_cast<uint32_t>(out_->call_edges_.size());
      out_->nodes_.push_back(node);
    }
    return Status::ok();
  }

  // Removes edges into positions from which the rule cannot finish (and
  // calls of rules that cannot finish at all), so every byte the matcher
  // accepts can be completed to a full sentence: an empty-language branch
  // (a `false` schema, an impossible range) can never trap a generation.
  Status prune_dead_ends() {
    CompiledGrammar& c = *out_;
    const int32_t n = c.num_positions();
    std::vector<bool> productive(c.num_rules(), false), live(n, false);
    // Reverse edges within rules.
    std::vector<std::vector<std::pair<int32_t, int32_t>>> rev(n);  // (from, callee or -1)
    for (int32_t p = 0; p < n; ++p) {
      for (auto* e = c.byte_begin(p); e != c.byte_end(p); ++e) rev[e->to].push_back({p, -1});
      for (auto* k = c.call_begin(p); k != c.call_end(p); ++k) rev[k->to].push_back({p, k->rule});
    }
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<int32_t> work;
      for (int32_t p = 0; p < n; ++p)
        if (!live[p] && c.nodes_[p].is_final) {
          live[p] = true;
          work.push_back(p);
        }
      for (int32_t p = 0; p < n; ++p)
        if (live[p]) work.push_back(p);
      while (!work.empty()) {
        const int32_t v = work.back();
        work.pop_back();
        for (const auto& [u, callee] : rev[v]) {
          if (live[u] || (callee >= 0 && !productive[callee])) continue;
          live[u] = true;
          work.push_back(u);
        }
      }
      for (int32_t r = 0; r < c.num_rules(); ++r) {
        if (!productive[r] && live[c.rule_start_[r]]) productive[r] = changed = true;
      }
    }
    if (!productive[c.root_rule_])
      return invalid_argument("grammar: matches nothing (unsatisfiable)");
    std::vector<CompiledGrammar::ByteEdge> bytes;
    std::vector<CompiledGrammar::CallEdge> calls;
    for (int32_t p = 0; p < n; ++p) {
      CompiledGrammar::Node& nd = c.nodes_[p];
      const uint32_t b0 = static_cast<uint32_t>(bytes.size());
      const uint32_t k0 = static_cast<uint32_t>(calls.size());
      if (live[p]) {
        for (uint32_t i = nd.byte_begin; i < nd.byte_end; ++i)
          if (live[c.byte_edges_[i].to]) bytes.push_back(c.byte_edges_[i]);
        for (uint32_t i = nd.call_begin; i < nd.call_end; ++i)
          if (live[c.call_edges_[i].to] && productive[c.call_edges_[i].rule])
            calls.push_back(c.call_edges_[i]);
      }
      nd.byte_begin = b0;
      nd.byte_end = static_cast<uint32_t>(bytes.size());
      nd.call_begin = k0;
      nd.call_end = static_cast<uint32_t>(calls.size());
    }
    c.byte_edges_ = std::move(bytes);
    c.call_edges_ = std::move(calls);
    return Status::ok();
  }

  Status check_size_exceeded() const {
    return Status(StatusCode::kResourceExhausted,
                  "grammar: too large (more than " + std::to_string(opt_.max_nodes) +
                      " automaton states; lower repetition counts such as maxLength)");
  }

  Result<int32_t> build_wrapper(int32_t start) {
    const int32_t r = g_.root();
    if (inline_[r]) return build(g_.rule_body(r), start, 0);
    const int32_t end = new_node();
    t_[start].calls.push_back({r, end});
    return end;
  }

  const Grammar& g_;
  const CompileOptions& opt_;
  CompiledGrammar* out_ = nullptr;
  std::vector<bool> nullable_, recursive_, inline_;
  std::vector<int64_t> size_;
  std::vector<int32_t> rule_id_;
  std::vector<TNode> t_;
};

Result<std::shared_ptr<const CompiledGrammar>> CompiledGrammar::compile(
    const Grammar& grammar, const CompileOptions& options) {
  return GrammarCompiler(grammar, options).run();
}

}  // namespace strata
