#include "jinja/resolver.h"

#include "jinja/builtins.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"

namespace strata::jinja {
namespace {

void scan_stmt(const Stmt& s, MacroNameUse* scan);
void scan_args(const CallArgsExpr& a, MacroNameUse* scan);

void scan_expr(const Expr* e, MacroNameUse* scan) {
  if (!e) return;
  switch (e->kind) {
    case ExprKind::kName: {
      const auto& n = static_cast<const NameExpr&>(*e).name;
      if (n == "caller") scan->caller = true;
      if (n == "kwargs") scan->kwargs = true;
      if (n == "varargs") scan->varargs = true;
      return;
    }
    case ExprKind::kConst:
      return;
    case ExprKind::kGetattr:
      scan_expr(static_cast<const GetattrExpr*>(e)->object.get(), scan);
      return;
    case ExprKind::kGetitem: {
      auto* g = static_cast<const GetitemExpr*>(e);
      scan_expr(g->object.get(), scan);
      scan_expr(g->key.get(), scan);
      return;
    }
    case ExprKind::kSlice: {
      auto* s = static_cast<const SliceExpr*>(e);
      scan_expr(s->start.get(), scan);
      scan_expr(s->stop.get(), scan);
      scan_expr(s->step.get(), scan);
      return;
    }
    case ExprKind::kCall: {
      auto* c = static_cast<const CallExpr*>(e);
      scan_expr(c->callee.get(), scan);
      scan_args(c->args, scan);
      return;
    }
    case ExprKind::kFilter: {
      auto* f = static_cast<const FilterExpr*>(e);
      scan_expr(f->input.get(), scan);
      scan_args(f->args, scan);
      return;
    }
    case ExprKind::kTest: {
      auto* t = static_cast<const TestExpr*>(e);
      scan_expr(t->input.get(), scan);
      scan_args(t->args, scan);
      return;
    }
    case ExprKind::kNot:
    case ExprKind::kNeg:
    case ExprKind::kPos:
      scan_expr(static_cast<const UnaryExpr*>(e)->operand.get(), scan);
      return;
    case ExprKind::kBinary: {
      auto* b = static_cast<const BinaryExpr*>(e);
      scan_expr(b->left.get(), scan);
      scan_expr(b->right.get(), scan);
      return;
    }
    case ExprKind::kAnd:
    case ExprKind::kOr: {
      auto* l = static_cast<const LogicalExpr*>(e);
      scan_expr(l->left.get(), scan);
      scan_expr(l->right.get(), scan);
      return;
    }
    case ExprKind::kConcat:
      for (const auto& p : static_cast<const ConcatExpr*>(e)->parts) scan_expr(p.get(), scan);
      return;
    case ExprKind::kCompare: {
      auto* c = static_cast<const CompareExpr*>(e);
      scan_expr(c->left.get(), scan);
      for (const auto& [op, rhs] : c->ops) scan_expr(rhs.get(), scan);
      return;
    }
    case ExprKind::kCondExpr: {
      auto* c = static_cast<const CondExpr*>(e);
      scan_expr(c->test.get(), scan);
      scan_expr(c->then_expr.get(), scan);
      scan_expr(c->else_expr.get(), scan);
      return;
    }
    case ExprKind::kList:
    case ExprKind::kTuple:
      for (const auto& i : static_cast<const SequenceExpr*>(e)->items) scan_expr(i.get(), scan);
      return;
    case ExprKind::kDict:
      for (const auto& [k, v] : static_cast<const DictExpr*>(e)->items) {
        scan_expr(k.get(), scan);
        scan_expr(v.get(), scan);
      }
      return;
  }
}

void scan_args(const CallArgsExpr& a, MacroNameUse* scan) {
  for (const auto& p : a.positional) scan_expr(p.get(), scan);
  for (const auto& [k, v] : a.keywords) scan_expr(v.get(), scan);
  scan_expr(a.dyn_args.get(), scan);
  scan_expr(a.dyn_kwargs.get(), scan);
}

void scan_body(const Body& body, MacroNameUse* scan) {
  for (const auto& s : body) scan_stmt(*s, scan);
}

void scan_stmt(const Stmt& s, MacroNameUse* scan) {
  switch (s.kind) {
    case StmtKind::kOutput:
      for (const auto& p : static_cast<const OutputStmt&>(s).parts) scan_expr(p.expr.get(), scan);
      return;
    case StmtKind::kFor: {
      const auto& f = static_cast<const ForStmt&>(s);
      scan_expr(f.iter.get(), scan);
      scan_expr(f.filter.get(), scan);
      scan_body(f.body, scan);
      scan_body(f.else_body, scan);
      return;
    }
    case StmtKind::kIf: {
      const auto& i = static_cast<const IfStmt&>(s);
      for (const auto& [test, body] : i.branches) {
        scan_expr(test.get(), scan);
        scan_body(body, scan);
      }
      scan_body(i.else_body, scan);
      return;
    }
    case StmtKind::kSet:
      scan_expr(static_cast<const SetStmt&>(s).value.get(), scan);
      return;
    case StmtKind::kSetBlock: {
      const auto& b = static_cast<const SetBlockStmt&>(s);
      scan_expr(b.filter.get(), scan);
      scan_body(b.body, scan);
      return;
    }
    case StmtKind::kMacro: {
      const auto& m = static_cast<const MacroStmt&>(s);
      for (const auto& p : m.def.params) scan_expr(p.default_value.get(), scan);
      scan_body(m.def.body, scan);
      return;
    }
    case StmtKind::kCallBlock: {
      const auto& c = static_cast<const CallBlockStmt&>(s);
      scan_expr(c.call.get(), scan);
      for (const auto& p : c.caller.params) scan_expr(p.default_value.get(), scan);
      scan_body(c.caller.body, scan);
      return;
    }
    case StmtKind::kFilterBlock: {
      const auto& f = static_cast<const FilterBlockStmt&>(s);
      scan_expr(f.filter.get(), scan);
      scan_body(f.body, scan);
      return;
    }
    case StmtKind::kWith: {
      const auto& w = static_cast<const WithStmt&>(s);
      for (const auto& [t, v] : w.assignments) scan_expr(v.get(), scan);
      scan_body(w.body, scan);
      return;
    }
    case StmtKind::kScope:
      scan_body(static_cast<const ScopeStmt&>(s).body, scan);
      return;
    default:
      return;
  }
}

class Resolver {
 public:
  void body(Body& b, bool soft) {
    for (auto& s : b) stmt(*s, soft);
  }

 private:
  void args(CallArgsExpr& a, bool soft) {
    for (auto& p : a.positional) expr(p.get(), soft);
    for (auto& [k, v] : a.keywords) expr(v.get(), soft);
    expr(a.dyn_args.get(), soft);
    expr(a.dyn_kwargs.get(), soft);
  }

  void expr(Expr* e, bool soft) {
    if (!e) return;
    switch (e->kind) {
      case ExprKind::kConst:
      case ExprKind::kName:
        return;
      case ExprKind::kGetattr:
        expr(static_cast<GetattrExpr*>(e)->object.get(), soft);
        return;
      case ExprKind::kGetitem: {
        auto* g = static_cast<GetitemExpr*>(e);
        expr(g->object.get(), soft);
        expr(g->key.get(), soft);
        return;
      }
      case ExprKind::kSlice: {
        auto* s = static_cast<SliceExpr*>(e);
        expr(s->start.get(), soft);
        expr(s->stop.get(), soft);
        expr(s->step.get(), soft);
        return;
      }
      case ExprKind::kCall: {
        auto* c = static_cast<CallExpr*>(e);
        expr(c->callee.get(), soft);
        args(c->args, soft);
        return;
      }
      case ExprKind::kFilter: {
        auto* f = static_cast<FilterExpr*>(e);
        f->fn = find_filter(f->name);
        if (!f->fn && !soft) {
          throw TemplateException(TemplateError(ErrorKind::kSyntax,
                                                "No filter named " + py::repr(f->name) + ".",
                                                f->line, f->column));
        }
        expr(f->input.get(), soft);
        args(f->args, soft);
        return;
      }
      case ExprKind::kTest: {
        auto* t = static_cast<TestExpr*>(e);
        t->fn = find_test(t->name);
        if (!t->fn && !soft) {
          throw TemplateException(TemplateError(
              ErrorKind::kSyntax, "No test named " + py::repr(t->name) + ".", t->line, t->column));
        }
        expr(t->input.get(), soft);
        args(t->args, soft);
        return;
      }
      case ExprKind::kNot:
      case ExprKind::kNeg:
      case ExprKind::kPos:
        expr(static_cast<UnaryExpr*>(e)->operand.get(), soft);
        return;
      case ExprKind::kBinary: {
        auto* b = static_cast<BinaryExpr*>(e);
        expr(b->left.get(), soft);
        expr(b->right.get(), soft);
        return;
      }
      case ExprKind::kAnd:
      case ExprKind::kOr: {
        auto* l = static_cast<LogicalExpr*>(e);
        expr(l->left.get(), soft);
        expr(l->right.get(), soft);
        return;
      }
      case ExprKind::kConcat:
        for (auto& p : static_cast<ConcatExpr*>(e)->parts) expr(p.get(), soft);
        return;
      case ExprKind::kCompare: {
        auto* c = static_cast<CompareExpr*>(e);
        expr(c->left.get(), soft);
        for (auto& [op, rhs] : c->ops) expr(rhs.get(), soft);
        return;
      }
      case ExprKind::kCondExpr: {
        auto* c = static_cast<CondExpr*>(e);
        expr(c->test.get(), true);
        expr(c->then_expr.get(), true);
        expr(c->else_expr.get(), true);
        return;
      }
      case ExprKind::kList:
      case ExprKind::kTuple:
        for (auto& i : static_cast<SequenceExpr*>(e)->items) expr(i.get(), soft);
        return;
      case ExprKind::kDict:
        for (auto& [k, v] : static_cast<DictExpr*>(e)->items) {
          expr(k.get(), soft);
          expr(v.get(), soft);
        }
        return;
    }
  }

  void macro(MacroDef& def) {
    for (auto& p : def.params) expr(p.default_value.get(), false);
    body(def.body, false);
  }

  void stmt(Stmt& s, bool soft) {
    switch (s.kind) {
      case StmtKind::kOutput:
        for (auto& p : static_cast<OutputStmt&>(s).parts) expr(p.expr.get(), soft);
        return;
      case StmtKind::kFor: {
        auto& f = static_cast<ForStmt&>(s);
        expr(f.iter.get(), soft);
        expr(f.filter.get(), false);
        body(f.body, false);
        body(f.else_body, false);
        return;
      }
      case StmtKind::kIf: {
        auto& i = static_cast<IfStmt&>(s);
        for (auto& [test, b] : i.branches) {
          expr(test.get(), true);
          body(b, true);
        }
        body(i.else_body, true);
        return;
      }
      case StmtKind::kSet:
        expr(static_cast<SetStmt&>(s).value.get(), soft);
        return;
      case StmtKind::kSetBlock: {
        auto& b = static_cast<SetBlockStmt&>(s);
        body(b.body, false);
        expr(b.filter.get(), false);
        return;
      }
      case StmtKind::kMacro:
        macro(static_cast<MacroStmt&>(s).def);
        return;
      case StmtKind::kCallBlock: {
        auto& c = static_cast<CallBlockStmt&>(s);
        expr(c.call.get(), soft);
        macro(c.caller);
        return;
      }
      case StmtKind::kFilterBlock: {
        auto& f = static_cast<FilterBlockStmt&>(s);
        expr(f.filter.get(), false);
        body(f.body, false);
        return;
      }
      case StmtKind::kWith: {
        auto& w = static_cast<WithStmt&>(s);
        for (auto& [t, v] : w.assignments) expr(v.get(), soft);
        body(w.body, false);
        return;
      }
      case StmtKind::kScope:
        body(static_cast<ScopeStmt&>(s).body, false);
        return;
      default:
        return;
    }
  }
};

}  // namespace

void resolve_builtins(Body* body) {
  Resolver().body(*body, false);
}

MacroNameUse scan_macro_names(const Body& body) {
  MacroNameUse use;
  scan_body(body, &use);
  return use;
}

}  // namespace strata::jinja
