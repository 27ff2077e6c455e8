// Interpreter: renders a TemplateProgram, with the semantics of Jinja2 3.1
// in Hugging Face's ImmutableSandboxedEnvironment: scoping (a for-loop
// iteration and a macro call each get a frame; `set` binds in the current
// one; macros see their defining frame, late-bound), Undefined, the sandbox's
// attribute rules (dict methods shadow keys; mutating list/dict methods are
// refused, except list.pop/clear which Jinja allows), macros with
// caller/varargs/kwargs, recursive loops, and the RenderLimits.
//
// One Interpreter renders once, on one thread; it reads the program (shared,
// immutable) and owns everything it creates. Errors are thrown as
// TemplateException; Template::render catches them. The public methods
// below are the services builtins (filters, tests, methods) use.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/render_options.h"
#include "jinja/value.h"

namespace strata::jinja {

struct Frame;
using FramePtr = std::shared_ptr<Frame>;
class MacroObject;
class NamespaceObject;

class Interpreter {
 public:
  Interpreter(const TemplateProgram& program, const RenderOptions& options);
  ~Interpreter();

  // Renders the program with `vars` as the template's context (later
  // entries win over earlier ones with the same name).
  std::string render(const std::vector<std::pair<std::string, Value>>& vars);

  // ---- services for builtins ----
  const RenderOptions& options() const { return options_; }
  // The bound on any string the render builds (RenderLimits::max_output_bytes).
  size_t max_string_bytes() const { return options_.limits.max_output_bytes; }
  // Calls any callable Value (macro, builtin, bound method).
  Value call(const Value& callee, CallArgs& args);
  // environment.getattr / getitem of the sandbox.
  Value getattr(const Value& obj, std::string_view name);
  Value getitem(const Value& obj, const Value& key);
  // Runs the named builtin test / filter (select, map, ...).
  bool run_test(const std::string& name, const Value& value, CallArgs& args);
  Value run_filter(const std::string& name, const Value& value, CallArgs& args);
  // Budget accounting; throw kLimit errors when a bound is crossed.
  void charge_items(size_t n);
  void charge_bytes(size_t n);
  // Fails now if walking `n` more items could not fit the iteration budget
  // (checked before a sequence is materialized).
  void check_items(size_t n) const;
  // A string value after checking its size against the limits.
  Value make_string(std::string s, bool markup = false);
  // Python's binary operators (+ - * / // % **).
  Value binary_op(BinaryOp op, const Value& a, const Value& b);
  // Namespaces can hold themselves (ns.x = ns); the interpreter clears the
  // ones it created when the render ends, so no cycle outlives it.
  void track_namespace(std::shared_ptr<NamespaceObject> ns);

  // For MacroObject / LoopObject.
  Value invoke_macro(const MacroObject& macro, CallArgs& args);
  Value recurse_loop(const ForStmt& loop, const FramePtr& frame, const Value& iterable, int depth0);

 private:
  enum class Flow { kNormal, kBreak, kContinue };
  struct DepthGuard;

  Flow exec_body(const Body& body, const FramePtr& frame);
  Flow exec(const Stmt& stmt, const FramePtr& frame);
  void run_loop(const ForStmt& loop, const FramePtr& frame, const Value& iterable, int depth0);
  void assign(const Target& target, const Value& value, const FramePtr& frame);
  std::string capture(const Body& body, const FramePtr& frame);
  Value make_macro(const MacroDef& def, const FramePtr& frame);

  Value eval(const Expr& expr, const FramePtr& frame);
  Value lookup(const NameExpr& name, const FramePtr& frame);
  Value eval_call(const CallExpr& call, const FramePtr& frame);
  void eval_args(const CallArgsExpr& in, const FramePtr& frame, CallArgs* out);
  Value eval_filter(const FilterExpr& f, const FramePtr& frame, const Value* block_input);
  Value eval_compare(const CompareExpr& c, const FramePtr& frame);
  Value eval_slice(const Value& obj, const SliceExpr& s, const FramePtr& frame);
  Value global(int symbol);
  void append_output(std::string_view text);

  const TemplateProgram& program_;
  const RenderOptions& options_;
  std::string* out_ = nullptr;
  FramePtr root_;
  std::vector<std::pair<int, Value>> globals_;  // created on first use
  // Frames that macros captured and namespaces: cleared after the render to
  // break reference cycles (frame -> macro -> frame).
  std::vector<FramePtr> macro_frames_;
  std::vector<std::shared_ptr<NamespaceObject>> namespaces_;
  int depth_ = 0;
  int call_depth_ = 0;
  int64_t iterations_ = 0;
  size_t work_bytes_ = 0;
};

}  // namespace strata::jinja
