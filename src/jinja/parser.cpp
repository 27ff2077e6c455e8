#include "jinja/parser.h"

#include <algorithm>
#include <unordered_map>

#include "jinja/py_string.h"
#include "jinja/resolver.h"
#include "jinja/template_error.h"

namespace strata::jinja {
namespace {

bool is_op(const Token& t, std::string_view op) {
  return t.type == TokenType::kOperator && t.text == op;
}
bool is_name(const Token& t, std::string_view name) {
  return t.type == TokenType::kName && t.text == name;
}

class Parser {
 public:
  Parser(std::vector<Token> tokens, int max_nesting, TemplateProgram* program)
      : tokens_(std::move(tokens)), max_nesting_(max_nesting), program_(program) {
    program_->loop_symbol = symbol("loop");
    program_->caller_symbol = symbol("caller");
    program_->varargs_symbol = symbol("varargs");
    program_->kwargs_symbol = symbol("kwargs");
  }

  void parse() { program_->body = subparse(nullptr); }

 private:
  // ---- token stream ----
  const Token& current() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& advance() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool at_eof() const { return current().type == TokenType::kEof; }

  [[noreturn]] void fail(const std::string& message, const Token& at) const {
    throw TemplateException(TemplateError(ErrorKind::kSyntax, message, at.line, at.column));
  }
  [[noreturn]] void fail(const std::string& message) const { fail(message, current()); }

  [[noreturn]] void fail_expected(const std::string& what) const {
    if (at_eof()) fail("unexpected end of template, expected " + py::repr(what) + ".");
    fail("expected token " + py::repr(what) + ", got " + py::repr(describe_token(current())));
  }

  const Token& expect_op(std::string_view op) {
    if (!is_op(current(), op)) fail_expected(std::string(op));
    return advance();
  }
  const Token& expect_name() {
    if (current().type != TokenType::kName) fail_expected("name");
    return advance();
  }
  const Token& expect_name(std::string_view name) {
    if (!is_name(current(), name)) fail_expected(std::string(name));
    return advance();
  }
  const Token& expect_type(TokenType type, const char* what) {
    if (current().type != type) fail_expected(what);
    return advance();
  }
  bool skip_op(std::string_view op) {
    if (!is_op(current(), op)) return false;
    advance();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(current(), name)) return false;
    advance();
    return true;
  }

  int symbol(const std::string& name) {
    auto it = symbol_ids_.find(name);
    if (it != symbol_ids_.end()) return it->second;
    const int id = static_cast<int>(program_->symbols.size());
    program_->symbols.push_back(name);
    symbol_ids_.emplace(name, id);
    return id;
  }

  struct NestingGuard {
    explicit NestingGuard(Parser* p) : parser(p) {
      if (++parser->nesting_ > parser->max_nesting_) {
        throw TemplateException(TemplateError(
            ErrorKind::kLimit,
            "template nesting exceeds " + std::to_string(parser->max_nesting_) + " levels",
            parser->current().line, parser->current().column));
      }
    }
    ~NestingGuard() { --parser->nesting_; }
    Parser* parser;
  };

  // A left-nested chain (a + b + c, x.y.z, v|f|g) deepens the tree by one
  // level per link, so each link counts as nesting until the chain ends.
  struct ChainGuard {
    explicit ChainGuard(Parser* p) : parser(p) {}
    void link() {
      ++links;
      if (++parser->nesting_ > parser->max_nesting_) {
        throw TemplateException(TemplateError(
            ErrorKind::kLimit,
            "template nesting exceeds " + std::to_string(parser->max_nesting_) + " levels",
            parser->current().line, parser->current().column));
      }
    }
    ~ChainGuard() { parser->nesting_ -= links; }
    Parser* parser;
    int links = 0;
  };

  // ---- statements ----

  using EndNames = std::vector<std::string>;

  Body subparse(const EndNames* end_names) {
    Body body;
    std::unique_ptr<OutputStmt> output;
    auto flush = [&] {
      if (output) body.push_back(std::move(output));
      output.reset();
    };
    auto out = [&]() -> OutputStmt& {
      if (!output) output = std::make_unique<OutputStmt>(current().line, current().column);
      return *output;
    };
    if (end_names) end_stack_.push_back(end_names);
    while (!at_eof()) {
      const Token& t = current();
      if (t.type == TokenType::kData) {
        out().parts.push_back({t.text, nullptr, t.line, t.column});
        advance();
      } else if (t.type == TokenType::kVariableBegin) {
        advance();
        OutputStmt& o = out();
        const int line = current().line;
        const int column = current().column;
        o.parts.push_back({std::string(), parse_tuple(false, true, nullptr, false), line, column});
        expect_type(TokenType::kVariableEnd, "end of print statement");
      } else if (t.type == TokenType::kBlockBegin) {
        flush();
        advance();
        if (end_names && current().type == TokenType::kName &&
            std::find(end_names->begin(), end_names->end(), current().text) != end_names->end()) {
          end_stack_.pop_back();
          return body;
        }
        parse_statement(&body);
        expect_type(TokenType::kBlockEnd, "end of statement block");
      } else {
        fail("unexpected " + py::repr(describe_token(t)));
      }
    }
    flush();
    if (end_names) end_stack_.pop_back();
    return body;
  }

  [[noreturn]] void fail_eof(const EndNames* innermost) {
    std::string msg = "Unexpected end of template.";
    const EndNames* looking =
        innermost ? innermost : (end_stack_.empty() ? nullptr : end_stack_.back());
    if (looking) {
      msg += " Jinja was looking for the following tags: ";
      for (size_t i = 0; i < looking->size(); ++i) {
        if (i > 0) msg += " or ";
        msg += py::repr((*looking)[i]);
      }
      msg += ".";
    }
    if (!tag_stack_.empty()) {
      msg += " The innermost block that needs to be closed is " + py::repr(tag_stack_.back()) + ".";
    }
    fail(msg);
  }

  [[noreturn]] void fail_unknown_tag(const Token& tag) {
    std::string msg = "Encountered unknown tag " + py::repr(tag.text) + ".";
    if (!end_stack_.empty()) {
      const EndNames& looking = *end_stack_.back();
      bool expected = false;
      for (const EndNames* names : end_stack_) {
        if (std::find(names->begin(), names->end(), tag.text) != names->end()) expected = true;
      }
      std::string list;
      for (size_t i = 0; i < looking.size(); ++i) {
        if (i > 0) list += " or ";
        list += py::repr(looking[i]);
      }
      if (expected) {
        msg +=
            " You probably made a nesting mistake. Jinja is expecting this tag, but currently "
            "looking for " +
            list + ".";
      } else {
        msg += " Jinja was looking for the following tags: " + list + ".";
      }
    }
    if (!tag_stack_.empty()) {
      msg += " The innermost block that needs to be closed is " + py::repr(tag_stack_.back()) + ".";
    }
    fail(msg, tag);
  }

  // The body of a statement up to one of `end_names`; leaves the end name as
  // the current token unless `drop_needle`.
  Body parse_statements(const EndNames& end_names, bool drop_needle) {
    skip_op(":");
    expect_type(TokenType::kBlockEnd, "end of statement block");
    Body body = subparse(&end_names);
    if (at_eof()) fail_eof(&end_names);
    if (drop_needle) advance();
    return body;
  }

  void parse_statement(Body* body) {
    NestingGuard guard(this);
    const Token& t = current();
    if (t.type != TokenType::kName) fail("tag name expected", t);
    const std::string name = t.text;
    static const std::vector<std::string> kKnown = {
        "for",     "if",     "block",  "extends",  "print",     "macro",
        "include", "from",   "import", "set",      "with",      "autoescape",
        "call",    "filter", "break",  "continue", "generation"};
    if (std::find(kKnown.begin(), kKnown.end(), name) == kKnown.end()) fail_unknown_tag(t);
    tag_stack_.push_back(name);
    if (name == "for") {
      body->push_back(parse_for());
    } else if (name == "if") {
      body->push_back(parse_if());
    } else if (name == "set") {
      body->push_back(parse_set());
    } else if (name == "macro") {
      body->push_back(parse_macro());
    } else if (name == "call") {
      body->push_back(parse_call_block());
    } else if (name == "filter") {
      body->push_back(parse_filter_block());
    } else if (name == "with") {
      body->push_back(parse_with());
    } else if (name == "print") {
      parse_print(body);
    } else if (name == "block") {
      body->push_back(parse_block());
    } else if (name == "generation") {
      const Token& g = advance();
      auto s = std::make_unique<ScopeStmt>(g.line, g.column);
      const int saved = loop_depth_;
      loop_depth_ = 0;  // the body is a caller macro in Jinja's extension
      s->body = parse_statements({"endgeneration"}, true);
      loop_depth_ = saved;
      body->push_back(std::move(s));
    } else if (name == "break" || name == "continue") {
      const Token& b = advance();
      if (loop_depth_ == 0) fail("'" + name + "' outside loop", b);
      body->push_back(std::make_unique<Stmt>(
          name == "break" ? StmtKind::kBreak : StmtKind::kContinue, b.line, b.column));
    } else if (name == "autoescape") {
      const Token& a = advance();
      parse_expression(true);
      parse_statements({"endautoescape"}, true);
      body->push_back(std::make_unique<UnsupportedStmt>("autoescape blocks are not supported",
                                                        a.line, a.column));
    } else {
      // extends / include / import / from: they need a template loader,
      // which a chat template never has (Jinja fails the same way).
      const Token& a = advance();
      while (!at_eof() && current().type != TokenType::kBlockEnd) advance();
      body->push_back(std::make_unique<UnsupportedStmt>("no loader for this environment specified",
                                                        a.line, a.column));
    }
    tag_stack_.pop_back();
  }

  StmtPtr parse_for() {
    const Token& f = expect_name("for");
    auto s = std::make_unique<ForStmt>(f.line, f.column);
    s->target = parse_assign_target(true, false, "in", false);
    expect_name("in");
    s->iter = parse_tuple(false, false, "recursive", false);
    if (skip_name("if")) s->filter = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (advance().text == "else") s->else_body = parse_statements({"endfor"}, true);
    return s;
  }

  StmtPtr parse_if() {
    const Token& i = expect_name("if");
    auto s = std::make_unique<IfStmt>(i.line, i.column);
    while (true) {
      ExprPtr test = parse_tuple(false, false, nullptr, false);
      Body b = parse_statements({"elif", "else", "endif"}, false);
      s->branches.emplace_back(std::move(test), std::move(b));
      const Token& t = advance();
      if (t.text == "elif") continue;
      if (t.text == "else") s->else_body = parse_statements({"endif"}, true);
      break;
    }
    return s;
  }

  StmtPtr parse_set() {
    const Token& t = advance();
    Target target = parse_assign_target(true, false, nullptr, true);
    if (skip_op("=")) {
      auto s = std::make_unique<SetStmt>(t.line, t.column);
      s->target = std::move(target);
      s->value = parse_tuple(false, true, nullptr, false);
      return s;
    }
    auto s = std::make_unique<SetBlockStmt>(t.line, t.column);
    s->target = std::move(target);
    s->filter = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  void parse_signature(MacroDef* def) {
    expect_op("(");
    bool seen_default = false;
    while (!is_op(current(), ")")) {
      if (!def->params.empty()) expect_op(",");
      const Token& n = expect_name();
      check_assignable(n);
      MacroParam p;
      p.name = n.text;
      p.symbol = symbol(n.text);
      if (skip_op("=")) {
        p.default_value = parse_expression(true);
        seen_default = true;
      } else if (seen_default) {
        fail("non-default argument follows default argument");
      }
      def->params.push_back(std::move(p));
    }
    expect_op(")");
  }

  void finish_macro(MacroDef* def, const Token& at) {
    const MacroNameUse use = scan_macro_names(def->body);
    def->uses_caller = use.caller;
    def->catch_kwargs = use.kwargs;
    def->catch_varargs = use.varargs;
    if (def->uses_caller) {
      for (const MacroParam& p : def->params) {
        if (p.name == "caller" && !p.default_value) {
          fail(
              "When defining macros or call blocks the special 'caller' argument must be "
              "omitted or be given a default.",
              at);
        }
      }
    }
  }

  StmtPtr parse_macro() {
    const Token& m = advance();
    auto s = std::make_unique<MacroStmt>(m.line, m.column);
    const Token& n = expect_name();
    check_assignable(n);
    s->def.name = n.text;
    s->symbol = symbol(n.text);
    parse_signature(&s->def);
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->def.body = parse_statements({"endmacro"}, true);
    loop_depth_ = saved;
    finish_macro(&s->def, m);
    return s;
  }

  StmtPtr parse_call_block() {
    const Token& c = advance();
    auto s = std::make_unique<CallBlockStmt>(c.line, c.column);
    s->caller.name = "caller";
    if (is_op(current(), "(")) parse_signature(&s->caller);
    s->call = parse_expression(true);
    if (s->call->kind != ExprKind::kCall) fail("expected call", c);
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->caller.body = parse_statements({"endcall"}, true);
    loop_depth_ = saved;
    finish_macro(&s->caller, c);
    return s;
  }

  StmtPtr parse_filter_block() {
    const Token& f = advance();
    auto s = std::make_unique<FilterBlockStmt>(f.line, f.column);
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    const Token& w = advance();
    auto s = std::make_unique<WithStmt>(w.line, w.column);
    while (current().type != TokenType::kBlockEnd) {
      if (!s->assignments.empty()) expect_op(",");
      Target t = parse_assign_target(true, false, nullptr, false);
      expect_op("=");
      s->assignments.emplace_back(std::move(t), parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  void parse_print(Body* body) {
    const Token& p = advance();
    auto s = std::make_unique<OutputStmt>(p.line, p.column);
    while (current().type != TokenType::kBlockEnd) {
      if (!s->parts.empty()) expect_op(",");
      const int line = current().line;
      const int column = current().column;
      s->parts.push_back({std::string(), parse_expression(true), line, column});
    }
    body->push_back(std::move(s));
  }

  StmtPtr parse_block() {
    const Token& b = advance();
    const Token& n = expect_name();
    const std::string name = n.text;
    skip_name("scoped");
    skip_name("required");
    if (is_op(current(), "-")) {
      fail(
          "Block names in Jinja have to be valid Python identifiers and may not contain "
          "hyphens, use an underscore instead.");
    }
    auto s = std::make_unique<ScopeStmt>(b.line, b.column);
    const int saved = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_statements({"endblock"}, true);
    loop_depth_ = saved;
    skip_name(name);
    return s;
  }

  // ---- assignment targets ----

  void check_assignable(const Token& n) const {
    static const char* kConsts[] = {"true", "false", "none", "True", "False", "None"};
    for (const char* c : kConsts) {
      if (n.text == c) fail("can't assign to 'const'", n);
    }
  }

  Target name_target(const Token& n) {
    check_assignable(n);
    Target t;
    t.kind = Target::Kind::kName;
    t.name = n.text;
    t.symbol = symbol(n.text);
    t.line = n.line;
    t.column = n.column;
    return t;
  }

  // A primary usable as a target: a name, or a parenthesized tuple of them.
  Target parse_primary_target() {
    const Token& t = current();
    if (t.type == TokenType::kName) {
      advance();
      return name_target(t);
    }
    if (is_op(t, "(")) {
      advance();
      Target tuple = parse_target_tuple(nullptr, true);
      expect_op(")");
      return tuple;
    }
    if (t.type == TokenType::kString || t.type == TokenType::kInteger ||
        t.type == TokenType::kFloat) {
      fail("can't assign to 'const'", t);
    }
    if (is_op(t, "[")) fail("can't assign to 'list'", t);
    if (is_op(t, "{")) fail("can't assign to 'dict'", t);
    fail("unexpected " + py::repr(describe_token(t)), t);
  }

  bool is_tuple_end(const char* extra_end_name) const {
    const Token& t = current();
    if (t.type == TokenType::kVariableEnd || t.type == TokenType::kBlockEnd || is_op(t, ")")) {
      return true;
    }
    return extra_end_name && is_name(t, extra_end_name);
  }

  Target parse_target_tuple(const char* extra_end_name, bool explicit_parentheses) {
    const Token& start = current();
    std::vector<Target> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end_name)) break;
      items.push_back(parse_primary_target());
      if (is_op(current(), ",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) {
        fail("Expected an expression, got " + py::repr(describe_token(current())));
      }
    }
    Target t;
    t.kind = Target::Kind::kTuple;
    t.elements = std::move(items);
    t.line = start.line;
    t.column = start.column;
    return t;
  }

  Target parse_assign_target(bool with_tuple, bool name_only, const char* extra_end_name,
                             bool with_namespace) {
    if (with_namespace && current().type == TokenType::kName && is_op(look(), ".")) {
      const Token& ns = advance();
      advance();  // .
      const Token& attr = expect_name();
      Target t;
      t.kind = Target::Kind::kNamespaceAttr;
      t.name = ns.text;
      t.symbol = symbol(ns.text);
      t.attr = attr.text;
      t.line = ns.line;
      t.column = ns.column;
      return t;
    }
    if (name_only) return name_target(expect_name());
    if (with_tuple) return parse_target_tuple(extra_end_name, false);
    return parse_primary_target();
  }

  // ---- expressions ----

  ExprPtr parse_expression(bool with_condexpr) {
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    NestingGuard guard(this);
    const Token& start = current();
    ExprPtr expr1 = parse_or();
    ChainGuard chain(this);
    while (skip_name("if")) {
      chain.link();
      auto c = std::make_unique<CondExpr>(start.line, start.column);
      c->then_expr = std::move(expr1);
      c->test = parse_or();
      if (skip_name("else")) c->else_expr = parse_condexpr();
      expr1 = std::move(c);
    }
    return expr1;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    ChainGuard chain(this);
    while (is_name(current(), "or")) {
      chain.link();
      const Token& t = advance();
      left = std::make_unique<LogicalExpr>(ExprKind::kOr, std::move(left), parse_and(), t.line,
                                           t.column);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    ChainGuard chain(this);
    while (is_name(current(), "and")) {
      chain.link();
      const Token& t = advance();
      left = std::make_unique<LogicalExpr>(ExprKind::kAnd, std::move(left), parse_not(), t.line,
                                           t.column);
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name(current(), "not")) {
      NestingGuard guard(this);
      const Token& t = advance();
      return std::make_unique<UnaryExpr>(ExprKind::kNot, parse_not(), t.line, t.column);
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const Token& start = current();
    ExprPtr expr = parse_math1();
    std::unique_ptr<CompareExpr> cmp;
    while (true) {
      const Token& t = current();
      std::optional<CompareOp> op;
      if (t.type == TokenType::kOperator) {
        if (t.text == "==") op = CompareOp::kEq;
        if (t.text == "!=") op = CompareOp::kNe;
        if (t.text == "<") op = CompareOp::kLt;
        if (t.text == "<=") op = CompareOp::kLe;
        if (t.text == ">") op = CompareOp::kGt;
        if (t.text == ">=") op = CompareOp::kGe;
        if (op) advance();
      } else if (is_name(t, "in")) {
        op = CompareOp::kIn;
        advance();
      } else if (is_name(t, "not") && is_name(look(), "in")) {
        op = CompareOp::kNotIn;
        advance();
        advance();
      }
      if (!op) break;
      if (!cmp) cmp = std::make_unique<CompareExpr>(std::move(expr), start.line, start.column);
      cmp->ops.emplace_back(*op, parse_math1());
    }
    if (cmp) return cmp;
    return expr;
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    ChainGuard chain(this);
    while (is_op(current(), "+") || is_op(current(), "-")) {
      chain.link();
      const Token& t = advance();
      const BinaryOp op = t.text == "+" ? BinaryOp::kAdd : BinaryOp::kSub;
      left = std::make_unique<BinaryExpr>(op, std::move(left), parse_concat(), t.line, t.column);
    }
    return left;
  }

  ExprPtr parse_concat() {
    const Token& start = current();
    ExprPtr first = parse_math2();
    if (!is_op(current(), "~")) return first;
    auto c = std::make_unique<ConcatExpr>(start.line, start.column);
    c->parts.push_back(std::move(first));
    while (skip_op("~")) c->parts.push_back(parse_math2());
    return c;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    ChainGuard chain(this);
    while (true) {
      const Token& t = current();
      std::optional<BinaryOp> op;
      if (is_op(t, "*")) op = BinaryOp::kMul;
      if (is_op(t, "/")) op = BinaryOp::kDiv;
      if (is_op(t, "//")) op = BinaryOp::kFloorDiv;
      if (is_op(t, "%")) op = BinaryOp::kMod;
      if (!op) break;
      chain.link();
      advance();
      left = std::make_unique<BinaryExpr>(*op, std::move(left), parse_pow(), t.line, t.column);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    ChainGuard chain(this);
    while (is_op(current(), "**")) {
      chain.link();
      const Token& t = advance();
      left = std::make_unique<BinaryExpr>(BinaryOp::kPow, std::move(left), parse_unary(true),
                                          t.line, t.column);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    NestingGuard guard(this);
    const Token& t = current();
    ExprPtr node;
    if (is_op(t, "-")) {
      advance();
      node = std::make_unique<UnaryExpr>(ExprKind::kNeg, parse_unary(false), t.line, t.column);
    } else if (is_op(t, "+")) {
      advance();
      node = std::make_unique<UnaryExpr>(ExprKind::kPos, parse_unary(false), t.line, t.column);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    const Token& t = current();
    if (t.type == TokenType::kName) {
      advance();
      if (t.text == "true" || t.text == "True") {
        return std::make_unique<ConstExpr>(Value::boolean(true), t.line, t.column);
      }
      if (t.text == "false" || t.text == "False") {
        return std::make_unique<ConstExpr>(Value::boolean(false), t.line, t.column);
      }
      if (t.text == "none" || t.text == "None") {
        return std::make_unique<ConstExpr>(Value::none(), t.line, t.column);
      }
      return std::make_unique<NameExpr>(t.text, symbol(t.text), t.line, t.column);
    }
    if (t.type == TokenType::kString) {
      std::string s = t.text;
      advance();
      while (current().type == TokenType::kString) s += advance().text;
      return std::make_unique<ConstExpr>(Value::string(std::move(s)), t.line, t.column);
    }
    if (t.type == TokenType::kInteger) {
      if (t.int_overflow) {
        throw TemplateException(TemplateError(
            ErrorKind::kLimit, "integer literal beyond 64 bits: " + t.text, t.line, t.column));
      }
      advance();
      return std::make_unique<ConstExpr>(Value::integer(t.int_value), t.line, t.column);
    }
    if (t.type == TokenType::kFloat) {
      advance();
      return std::make_unique<ConstExpr>(Value::number(t.float_value), t.line, t.column);
    }
    if (is_op(t, "(")) {
      advance();
      ExprPtr e = parse_tuple(false, true, nullptr, true);
      expect_op(")");
      return e;
    }
    if (is_op(t, "[")) {
      advance();
      auto l = std::make_unique<SequenceExpr>(ExprKind::kList, t.line, t.column);
      while (!is_op(current(), "]")) {
        if (!l->items.empty()) expect_op(",");
        if (is_op(current(), "]")) break;
        l->items.push_back(parse_expression(true));
      }
      expect_op("]");
      return l;
    }
    if (is_op(t, "{")) {
      advance();
      auto d = std::make_unique<DictExpr>(t.line, t.column);
      while (!is_op(current(), "}")) {
        if (!d->items.empty()) expect_op(",");
        if (is_op(current(), "}")) break;
        ExprPtr key = parse_expression(true);
        expect_op(":");
        d->items.emplace_back(std::move(key), parse_expression(true));
      }
      expect_op("}");
      return d;
    }
    if (at_eof()) fail("unexpected end of template");
    fail("unexpected " + py::repr(describe_token(t)));
  }

  // parse_tuple: a comma list becomes a tuple; `simplified` is not needed
  // here (targets have their own parser).
  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const char* extra_end_name,
                      bool explicit_parentheses) {
    (void)simplified;
    const Token& start = current();
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) expect_op(",");
      if (is_tuple_end(extra_end_name)) break;
      items.push_back(parse_expression(with_condexpr));
      if (is_op(current(), ",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) {
        fail("Expected an expression, got " + py::repr(describe_token(current())));
      }
    }
    auto t = std::make_unique<SequenceExpr>(ExprKind::kTuple, start.line, start.column);
    t->items = std::move(items);
    return t;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    ChainGuard chain(this);
    while (true) {
      const Token& t = current();
      if (is_op(t, ".") || is_op(t, "[") || is_op(t, "(")) chain.link();
      if (is_op(t, ".") || is_op(t, "[")) {
        node = parse_subscript(std::move(node));
      } else if (is_op(t, "(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    ChainGuard chain(this);
    while (true) {
      const Token& t = current();
      if (is_op(t, "|") || is_name(t, "is") || is_op(t, "(")) chain.link();
      if (is_op(t, "|")) {
        node = parse_filter(std::move(node), false);
      } else if (is_name(t, "is")) {
        node = parse_test(std::move(node));
      } else if (is_op(t, "(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    NestingGuard guard(this);
    const Token& t = advance();
    if (t.text == ".") {
      const Token& attr = current();
      advance();
      if (attr.type == TokenType::kName) {
        return std::make_unique<GetattrExpr>(std::move(node), attr.text, t.line, t.column);
      }
      if (attr.type != TokenType::kInteger) fail("expected name or number", attr);
      return std::make_unique<GetitemExpr>(
          std::move(node),
          std::make_unique<ConstExpr>(Value::integer(attr.int_value), attr.line, attr.column),
          t.line, t.column);
    }
    std::vector<ExprPtr> args;
    while (!is_op(current(), "]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    ExprPtr key;
    if (args.size() == 1) {
      key = std::move(args[0]);
    } else {
      auto tuple = std::make_unique<SequenceExpr>(ExprKind::kTuple, t.line, t.column);
      tuple->items = std::move(args);
      key = std::move(tuple);
    }
    return std::make_unique<GetitemExpr>(std::move(node), std::move(key), t.line, t.column);
  }

  ExprPtr parse_subscribed() {
    const Token& start = current();
    ExprPtr first;
    if (is_op(current(), ":")) {
      advance();
    } else {
      first = parse_expression(true);
      if (!is_op(current(), ":")) return first;
      advance();
    }
    auto s = std::make_unique<SliceExpr>(start.line, start.column);
    s->start = std::move(first);
    if (!is_op(current(), ":") && !is_op(current(), "]") && !is_op(current(), ",")) {
      s->stop = parse_expression(true);
    }
    if (is_op(current(), ":")) {
      advance();
      if (!is_op(current(), "]") && !is_op(current(), ",")) s->step = parse_expression(true);
    }
    return s;
  }

  void parse_call_args(CallArgsExpr* args) {
    const Token& open = expect_op("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) fail("invalid syntax for function call expression", open);
    };
    while (!is_op(current(), ")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(current(), ")")) break;
      }
      if (is_op(current(), "*")) {
        ensure(!args->dyn_args && !args->dyn_kwargs);
        advance();
        args->dyn_args = parse_expression(true);
      } else if (is_op(current(), "**")) {
        ensure(!args->dyn_kwargs);
        advance();
        args->dyn_kwargs = parse_expression(true);
      } else if (current().type == TokenType::kName && is_op(look(), "=")) {
        ensure(!args->dyn_kwargs);
        const std::string key = advance().text;
        advance();
        args->keywords.emplace_back(key, parse_expression(true));
      } else {
        ensure(!args->dyn_args && !args->dyn_kwargs && args->keywords.empty());
        args->positional.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    NestingGuard guard(this);
    const Token& t = current();
    auto c = std::make_unique<CallExpr>(std::move(node), t.line, t.column);
    parse_call_args(&c->args);
    return c;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    ChainGuard chain(this);
    while (is_op(current(), "|") || start_inline) {
      chain.link();
      if (!start_inline) advance();
      const Token& n = expect_name();
      std::string name = n.text;
      while (is_op(current(), ".")) {
        advance();
        name += "." + expect_name().text;
      }
      auto f = std::make_unique<FilterExpr>(std::move(node), name, n.line, n.column);
      if (is_op(current(), "(")) parse_call_args(&f->args);
      node = std::move(f);
      start_inline = false;
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    NestingGuard guard(this);
    const Token& is_token = advance();
    const bool negated = skip_name("not");
    const Token& n = expect_name();
    std::string name = n.text;
    while (is_op(current(), ".")) {
      advance();
      name += "." + expect_name().text;
    }
    auto t = std::make_unique<TestExpr>(std::move(node), name, is_token.line, is_token.column);
    const Token& c = current();
    if (is_op(c, "(")) {
      parse_call_args(&t->args);
    } else if ((c.type == TokenType::kName || c.type == TokenType::kString ||
                c.type == TokenType::kInteger || c.type == TokenType::kFloat || is_op(c, "(") ||
                is_op(c, "[") || is_op(c, "{")) &&
               !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and")) {
      if (is_name(c, "is")) fail("You cannot chain multiple tests with is");
      t->args.positional.push_back(parse_postfix(parse_primary()));
    }
    if (negated) {
      return std::make_unique<UnaryExpr>(ExprKind::kNot, std::move(t), is_token.line,
                                         is_token.column);
    }
    return t;
  }

  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int max_nesting_;
  int nesting_ = 0;
  int loop_depth_ = 0;
  TemplateProgram* program_;
  std::unordered_map<std::string, int> symbol_ids_;
  std::vector<const EndNames*> end_stack_;
  std::vector<std::string> tag_stack_;
};

}  // namespace

TemplateProgram parse_program(std::vector<Token> tokens, int max_nesting) {
  TemplateProgram program;
  Parser(std::move(tokens), max_nesting, &program).parse();
  resolve_builtins(&program.body);
  return program;
}

}  // namespace strata::jinja
