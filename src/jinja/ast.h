// The syntax tree of a parsed Jinja template (Parser builds it, Interpreter
// walks it). Node types mirror jinja2.nodes. Every node owns its children
// (unique_ptr); the tree is immutable after parsing and shared by every
// render of the template, possibly from several threads at once.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace strata::jinja {

class Interpreter;
struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// A builtin filter: Python's filter(value, *args, **kwargs).
using FilterFn = Value (*)(Interpreter& interp, const Value& input, CallArgs& args);
// A builtin test: Python's test(value, *args, **kwargs).
using TestFn = bool (*)(Interpreter& interp, const Value& input, CallArgs& args);

enum class ExprKind : uint8_t {
  kConst,
  kName,
  kGetattr,
  kGetitem,
  kSlice,
  kCall,
  kFilter,
  kTest,
  kNot,
  kNeg,
  kPos,
  kBinary,
  kAnd,
  kOr,
  kConcat,
  kCompare,
  kCondExpr,
  kList,
  kTuple,
  kDict,
};

enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  Expr(ExprKind k, int l, int c) : kind(k), line(l), column(c) {}
  virtual ~Expr() = default;
  ExprKind kind;
  int line;
  int column;
};

struct ConstExpr : Expr {
  ConstExpr(Value v, int l, int c) : Expr(ExprKind::kConst, l, c), value(std::move(v)) {}
  Value value;  // None, bool, number or str (never a container: those are fresh per evaluation)
};

struct NameExpr : Expr {
  NameExpr(std::string n, int sym, int l, int c)
      : Expr(ExprKind::kName, l, c), name(std::move(n)), symbol(sym) {}
  std::string name;
  int symbol;  // index into TemplateProgram::symbols
};

struct GetattrExpr : Expr {
  GetattrExpr(ExprPtr o, std::string a, int l, int c)
      : Expr(ExprKind::kGetattr, l, c), object(std::move(o)), attr(std::move(a)) {}
  ExprPtr object;
  std::string attr;
};

struct GetitemExpr : Expr {
  GetitemExpr(ExprPtr o, ExprPtr k, int l, int c)
      : Expr(ExprKind::kGetitem, l, c), object(std::move(o)), key(std::move(k)) {}
  ExprPtr object;
  ExprPtr key;  // may be a SliceExpr
};

struct SliceExpr : Expr {
  SliceExpr(int l, int c) : Expr(ExprKind::kSlice, l, c) {}
  ExprPtr start, stop, step;  // each optional
};

// Arguments as written at a call site: f(a, b, k=v, *args, **kwargs).
struct CallArgsExpr {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  ExprPtr dyn_args;
  ExprPtr dyn_kwargs;
};

struct CallExpr : Expr {
  CallExpr(ExprPtr f, int l, int c) : Expr(ExprKind::kCall, l, c), callee(std::move(f)) {}
  ExprPtr callee;
  CallArgsExpr args;
};

struct FilterExpr : Expr {
  FilterExpr(ExprPtr in, std::string n, int l, int c)
      : Expr(ExprKind::kFilter, l, c), input(std::move(in)), name(std::move(n)) {}
  ExprPtr input;  // null inside {% filter %} and {% set x | f %}: the block's output
  std::string name;
  FilterFn fn = nullptr;  // null: unknown (an error when reached, as in Jinja's soft frames)
  CallArgsExpr args;
};

struct TestExpr : Expr {
  TestExpr(ExprPtr in, std::string n, int l, int c)
      : Expr(ExprKind::kTest, l, c), input(std::move(in)), name(std::move(n)) {}
  ExprPtr input;
  std::string name;
  TestFn fn = nullptr;
  CallArgsExpr args;
};

struct UnaryExpr : Expr {
  UnaryExpr(ExprKind k, ExprPtr o, int l, int c) : Expr(k, l, c), operand(std::move(o)) {}
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  BinaryExpr(BinaryOp o, ExprPtr a, ExprPtr b, int l, int c)
      : Expr(ExprKind::kBinary, l, c), op(o), left(std::move(a)), right(std::move(b)) {}
  BinaryOp op;
  ExprPtr left, right;
};

// `and` / `or` (kind kAnd / kOr).
struct LogicalExpr : Expr {
  LogicalExpr(ExprKind k, ExprPtr a, ExprPtr b, int l, int c)
      : Expr(k, l, c), left(std::move(a)), right(std::move(b)) {}
  ExprPtr left, right;
};

struct ConcatExpr : Expr {
  ConcatExpr(int l, int c) : Expr(ExprKind::kConcat, l, c) {}
  std::vector<ExprPtr> parts;
};

struct CompareExpr : Expr {
  CompareExpr(ExprPtr first, int l, int c)
      : Expr(ExprKind::kCompare, l, c), left(std::move(first)) {}
  ExprPtr left;
  std::vector<std::pair<CompareOp, ExprPtr>> ops;
};

struct CondExpr : Expr {
  CondExpr(int l, int c) : Expr(ExprKind::kCondExpr, l, c) {}
  ExprPtr test, then_expr, else_expr;  // else_expr optional
};

// List or tuple literal (kind kList / kTuple).
struct SequenceExpr : Expr {
  SequenceExpr(ExprKind k, int l, int c) : Expr(k, l, c) {}
  std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
  DictExpr(int l, int c) : Expr(ExprKind::kDict, l, c) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

// ---- statements ----

enum class StmtKind : uint8_t {
  kOutput,
  kFor,
  kIf,
  kSet,
  kSetBlock,
  kMacro,
  kCallBlock,
  kFilterBlock,
  kWith,
  kBreak,
  kContinue,
  kScope,        // {% generation %} and {% block %}: the body, rendered in place
  kUnsupported,  // {% include %} etc.: an error when executed
};

struct Stmt {
  Stmt(StmtKind k, int l, int c) : kind(k), line(l), column(c) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line;
  int column;
};

// Template text and {{ expressions }} in order (one of data / expr per part).
struct OutputStmt : Stmt {
  OutputStmt(int l, int c) : Stmt(StmtKind::kOutput, l, c) {}
  struct Part {
    std::string data;
    ExprPtr expr;  // null: `data` is literal text
    int line = 0;  // where the expression starts
    int column = 0;
  };
  std::vector<Part> parts;
};

// An assignment target: a name, a namespace attribute (ns.attr) or a tuple
// of names.
struct Target {
  enum class Kind { kName, kNamespaceAttr, kTuple } kind = Kind::kName;
  std::string name;
  int symbol = -1;
  std::string attr;              // kNamespaceAttr
  std::vector<Target> elements;  // kTuple
  int line = 0;
  int column = 0;
};

struct ForStmt : Stmt {
  ForStmt(int l, int c) : Stmt(StmtKind::kFor, l, c) {}
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // `for x in xs if cond`
  bool recursive = false;
  Body body;
  Body else_body;
};

struct IfStmt : Stmt {
  IfStmt(int l, int c) : Stmt(StmtKind::kIf, l, c) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if and elif
  Body else_body;
};

struct SetStmt : Stmt {
  SetStmt(int l, int c) : Stmt(StmtKind::kSet, l, c) {}
  Target target;
  ExprPtr value;
};

struct SetBlockStmt : Stmt {
  SetBlockStmt(int l, int c) : Stmt(StmtKind::kSetBlock, l, c) {}
  Target target;
  ExprPtr filter;  // optional FilterExpr chain whose innermost input is null
  Body body;
};

struct MacroParam {
  std::string name;
  int symbol = -1;
  ExprPtr default_value;  // optional
};

// The shared part of {% macro %} and the body of {% call %}.
struct MacroDef {
  std::string name;  // "caller" for call blocks
  std::vector<MacroParam> params;
  Body body;
  bool catch_varargs = false;  // the body reads `varargs`
  bool catch_kwargs = false;   // the body reads `kwargs`
  bool uses_caller = false;    // the body reads `caller`
};

struct MacroStmt : Stmt {
  MacroStmt(int l, int c) : Stmt(StmtKind::kMacro, l, c) {}
  int symbol = -1;
  MacroDef def;
};

struct CallBlockStmt : Stmt {
  CallBlockStmt(int l, int c) : Stmt(StmtKind::kCallBlock, l, c) {}
  ExprPtr call;  // a CallExpr
  MacroDef caller;
};

struct FilterBlockStmt : Stmt {
  FilterBlockStmt(int l, int c) : Stmt(StmtKind::kFilterBlock, l, c) {}
  ExprPtr filter;  // FilterExpr chain whose innermost input is null
  Body body;
};

struct WithStmt : Stmt {
  WithStmt(int l, int c) : Stmt(StmtKind::kWith, l, c) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

struct ScopeStmt : Stmt {
  ScopeStmt(int l, int c) : Stmt(StmtKind::kScope, l, c) {}
  Body body;
};

struct UnsupportedStmt : Stmt {
  UnsupportedStmt(std::string m, int l, int c)
      : Stmt(StmtKind::kUnsupported, l, c), message(std::move(m)) {}
  std::string message;
};

// A parsed template: its statements and the names they use.
struct TemplateProgram {
  Body body;
  std::vector<std::string> symbols;  // symbol id -> name
  int loop_symbol = -1;              // ids of the names the interpreter binds itself
  int caller_symbol = -1;
  int varargs_symbol = -1;
  int kwargs_symbol = -1;
};

}  // namespace strata::jinja
