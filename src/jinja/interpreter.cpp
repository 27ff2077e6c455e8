#include "jinja/interpreter.h"

#include <cmath>

#include "jinja/builtins.h"
#include "jinja/frame.h"
#include "jinja/operators.h"
#include "jinja/py_string.h"
#include "jinja/runtime_objects.h"
#include "jinja/template_error.h"
#include "jinja/value_format.h"

namespace strata::jinja {

struct Interpreter::DepthGuard {
  explicit DepthGuard(Interpreter* i) : interp(i) {
    if (++interp->depth_ > interp->options_.limits.max_eval_depth) {
      --interp->depth_;
      throw_limit("template evaluation nested deeper than " +
                  std::to_string(interp->options_.limits.max_eval_depth) + " levels");
    }
  }
  ~DepthGuard() { --interp->depth_; }
  Interpreter* interp;
};

Interpreter::Interpreter(const TemplateProgram& program, const RenderOptions& options)
    : program_(program), options_(options) {}

Interpreter::~Interpreter() = default;

std::string Interpreter::render(const std::vector<std::pair<std::string, Value>>& vars) {
  auto context = std::make_shared<Frame>(nullptr);
  for (const auto& [name, value] : vars) {
    for (size_t i = 0; i < program_.symbols.size(); ++i) {
      if (program_.symbols[i] == name) {
        context->set(static_cast<int>(i), value);
        break;
      }
    }
  }
  root_ = std::make_shared<Frame>(context);
  std::string out;
  out_ = &out;
  // Frames and namespaces can reference each other through macros; break
  // the cycles however the render ends.
  struct Cleanup {
    Interpreter* interp;
    ~Cleanup() {
      interp->root_->vars.clear();
      for (const FramePtr& f : interp->macro_frames_) f->vars.clear();
      for (const auto& ns : interp->namespaces_) ns->clear();
      interp->macro_frames_.clear();
      interp->namespaces_.clear();
      interp->globals_.clear();
      interp->out_ = nullptr;
    }
  } cleanup{this};
  exec_body(program_.body, root_);
  return out;
}

void Interpreter::track_namespace(std::shared_ptr<NamespaceObject> ns) {
  namespaces_.push_back(std::move(ns));
}

// ---- budgets ----

void Interpreter::charge_items(size_t n) {
  iterations_ += static_cast<int64_t>(n);
  if (iterations_ > options_.limits.max_iterations) {
    throw_limit("template ran more than " + std::to_string(options_.limits.max_iterations) +
                " loop iterations");
  }
}

void Interpreter::check_items(size_t n) const {
  if (static_cast<int64_t>(n) > options_.limits.max_iterations - iterations_) {
    throw_limit("template ran more than " + std::to_string(options_.limits.max_iterations) +
                " loop iterations");
  }
}

void Interpreter::charge_bytes(size_t n) {
  work_bytes_ += n;
  if (work_bytes_ > options_.limits.max_work_bytes) {
    throw_limit("template built more than " + std::to_string(options_.limits.max_work_bytes) +
                " bytes of strings");
  }
}

Value Interpreter::make_string(std::string s, bool markup) {
  if (s.size() > options_.limits.max_output_bytes) {
    throw_limit("template built a string of more than " +
                std::to_string(options_.limits.max_output_bytes) + " bytes");
  }
  charge_bytes(s.size());
  return markup ? Value::markup(std::move(s)) : Value::string(std::move(s));
}

void Interpreter::append_output(std::string_view text) {
  if (out_->size() + text.size() > options_.limits.max_output_bytes) {
    throw_limit("template output exceeds " + std::to_string(options_.limits.max_output_bytes) +
                " bytes");
  }
  charge_bytes(text.size());
  out_->append(text);
}

// ---- statements ----

Interpreter::Flow Interpreter::exec_body(const Body& body, const FramePtr& frame) {
  for (const auto& s : body) {
    const Flow f = exec(*s, frame);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

std::string Interpreter::capture(const Body& body, const FramePtr& frame) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec_body(body, frame);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Interpreter::Flow Interpreter::exec(const Stmt& stmt, const FramePtr& frame) {
  DepthGuard guard(this);
  try {
    switch (stmt.kind) {
      case StmtKind::kOutput: {
        for (const auto& part : static_cast<const OutputStmt&>(stmt).parts) {
          if (!part.expr) {
            append_output(part.data);
            continue;
          }
          try {
            const Value v = eval(*part.expr, frame);
            if (v.is_string()) {
              append_output(v.as_string());
            } else {
              append_output(to_str(v, max_string_bytes()));
            }
          } catch (TemplateException& e) {
            if (e.error().line() == 0) e.error().set_position(part.line, part.column);
            throw;
          }
        }
        return Flow::kNormal;
      }
      case StmtKind::kFor: {
        const auto& s = static_cast<const ForStmt&>(stmt);
        run_loop(s, frame, eval(*s.iter, frame), 0);
        return Flow::kNormal;
      }
      case StmtKind::kIf: {
        const auto& s = static_cast<const IfStmt&>(stmt);
        for (const auto& [test, body] : s.branches) {
          if (truthy(eval(*test, frame))) return exec_body(body, frame);
        }
        return exec_body(s.else_body, frame);
      }
      case StmtKind::kSet: {
        const auto& s = static_cast<const SetStmt&>(stmt);
        assign(s.target, eval(*s.value, frame), frame);
        return Flow::kNormal;
      }
      case StmtKind::kSetBlock: {
        const auto& s = static_cast<const SetBlockStmt&>(stmt);
        Value v = make_string(capture(s.body, std::make_shared<Frame>(frame)));
        if (s.filter) v = eval_filter(static_cast<const FilterExpr&>(*s.filter), frame, &v);
        assign(s.target, v, frame);
        return Flow::kNormal;
      }
      case StmtKind::kMacro: {
        const auto& s = static_cast<const MacroStmt&>(stmt);
        frame->set(s.symbol, make_macro(s.def, frame));
        return Flow::kNormal;
      }
      case StmtKind::kCallBlock: {
        const auto& s = static_cast<const CallBlockStmt&>(stmt);
        const auto& call = static_cast<const CallExpr&>(*s.call);
        CallArgs args;
        eval_args(call.args, frame, &args);
        args.keywords.emplace_back("caller", make_macro(s.caller, frame));
        Value callee;
        if (call.callee->kind == ExprKind::kGetattr) {
          const auto& g = static_cast<const GetattrExpr&>(*call.callee);
          callee = getattr(eval(*g.object, frame), g.attr);
        } else {
          callee = eval(*call.callee, frame);
        }
        const Value result = this->call(callee, args);
        append_output(to_str(result, max_string_bytes()));
        return Flow::kNormal;
      }
      case StmtKind::kFilterBlock: {
        const auto& s = static_cast<const FilterBlockStmt&>(stmt);
        const Value body = make_string(capture(s.body, std::make_shared<Frame>(frame)));
        append_output(to_str(eval_filter(static_cast<const FilterExpr&>(*s.filter), frame, &body),
                             max_string_bytes()));
        return Flow::kNormal;
      }
      case StmtKind::kWith: {
        const auto& s = static_cast<const WithStmt&>(stmt);
        auto inner = std::make_shared<Frame>(frame);
        for (const auto& [target, value] : s.assignments)
          assign(target, eval(*value, frame), inner);
        exec_body(s.body, inner);
        return Flow::kNormal;
      }
      case StmtKind::kBreak:
        return Flow::kBreak;
      case StmtKind::kContinue:
        return Flow::kContinue;
      case StmtKind::kScope:
        exec_body(static_cast<const ScopeStmt&>(stmt).body, std::make_shared<Frame>(frame));
        return Flow::kNormal;
      case StmtKind::kUnsupported:
        throw_runtime(static_cast<const UnsupportedStmt&>(stmt).message);
    }
  } catch (TemplateException& e) {
    if (e.error().line() == 0) e.error().set_position(stmt.line, stmt.column);
    throw;
  }
  return Flow::kNormal;
}

void Interpreter::run_loop(const ForStmt& s, const FramePtr& frame, const Value& iterable,
                           int depth0) {
  if (const auto n = length_of(iterable)) check_items(static_cast<size_t>(*n));
  std::vector<Value> items = iterate(iterable);
  if (s.filter) {
    charge_items(items.size());
    std::vector<Value> kept;
    for (Value& item : items) {
      auto test_frame = std::make_shared<Frame>(frame);
      assign(s.target, item, test_frame);
      if (truthy(eval(*s.filter, test_frame))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(s.else_body, std::make_shared<Frame>(frame));
    return;
  }
  auto shared_items = std::make_shared<const std::vector<Value>>(std::move(items));
  auto loop = std::make_shared<LoopObject>(shared_items, depth0, s.recursive ? &s : nullptr, frame);
  loop->set_self(loop);
  const Value loop_value = Value::object(loop);
  for (size_t i = 0; i < shared_items->size(); ++i) {
    charge_items(1);
    auto iteration = std::make_shared<Frame>(frame);
    assign(s.target, (*shared_items)[i], iteration);
    loop->set_index(static_cast<int64_t>(i));
    iteration->set(program_.loop_symbol, loop_value);
    if (exec_body(s.body, iteration) == Flow::kBreak) break;
  }
}

Value Interpreter::recurse_loop(const ForStmt& loop, const FramePtr& frame, const Value& iterable,
                                int depth0) {
  if (++call_depth_ > options_.limits.max_call_depth) {
    --call_depth_;
    throw_limit("recursive loop nested deeper than " +
                std::to_string(options_.limits.max_call_depth) + " levels");
  }
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    run_loop(loop, frame, iterable, depth0);
  } catch (...) {
    out_ = saved;
    --call_depth_;
    throw;
  }
  out_ = saved;
  --call_depth_;
  return make_string(std::move(buffer));
}

void Interpreter::assign(const Target& target, const Value& value, const FramePtr& frame) {
  switch (target.kind) {
    case Target::Kind::kName:
      frame->set(target.symbol, value);
      return;
    case Target::Kind::kNamespaceAttr: {
      const Value* ns = frame->lookup(target.symbol);
      auto* obj = ns && ns->is_object() ? dynamic_cast<NamespaceObject*>(ns->as_object()) : nullptr;
      if (!obj) throw_runtime("cannot assign attribute on non-namespace object");
      obj->set_attr(target.attr, value);
      return;
    }
    case Target::Kind::kTuple: {
      const std::vector<Value> items = iterate(value);
      const size_t n = target.elements.size();
      if (items.size() > n) {
        throw_runtime("too many values to unpack (expected " + std::to_string(n) + ")");
      }
      if (items.size() < n) {
        throw_runtime("not enough values to unpack (expected " + std::to_string(n) + ", got " +
                      std::to_string(items.size()) + ")");
      }
      for (size_t i = 0; i < n; ++i) assign(target.elements[i], items[i], frame);
      return;
    }
  }
}

Value Interpreter::make_macro(const MacroDef& def, const FramePtr& frame) {
  if (macro_frames_.empty() || macro_frames_.back() != frame) macro_frames_.push_back(frame);
  return Value::object(std::make_shared<MacroObject>(def, frame));
}

Value Interpreter::invoke_macro(const MacroObject& macro, CallArgs& args) {
  const MacroDef& def = macro.def();
  const size_t n = def.params.size();
  auto frame = std::make_shared<Frame>(macro.frame());
  std::vector<std::pair<std::string, Value>> kwargs = std::move(args.keywords);
  auto take_kwarg = [&](const std::string& name) -> std::optional<Value> {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      if (it->first == name) {
        Value v = std::move(it->second);
        kwargs.erase(it);
        return v;
      }
    }
    return std::nullopt;
  };
  bool found_caller = false;
  std::vector<std::optional<Value>> values(n);
  for (size_t i = 0; i < n; ++i) {
    if (i < args.positional.size()) {
      values[i] = args.positional[i];
      if (def.params[i].name == "caller") found_caller = true;
    } else {
      values[i] = take_kwarg(def.params[i].name);
      if (def.params[i].name == "caller") found_caller = true;
    }
  }
  Value caller;
  if (def.uses_caller && !found_caller) {
    if (auto c = take_kwarg("caller"); c && !c->is_none()) {
      caller = std::move(*c);
    } else {
      caller = Value::undefined_hint("No caller defined");
    }
  }
  Value kwargs_value;
  if (def.catch_kwargs) {
    DictData d;
    for (auto& [k, v] : kwargs) d.set(Value::string(k), std::move(v));
    kwargs_value = Value::dict(std::move(d));
  } else if (!kwargs.empty()) {
    std::string name;
    py::append_repr(def.name, &name);
    for (const auto& [k, v] : kwargs) {
      if (k == "caller") {
        throw_runtime("macro " + name +
                      " was invoked with two values for the special caller argument. This is "
                      "most likely a bug.");
      }
    }
    std::string key;
    py::append_repr(kwargs[0].first, &key);
    throw_runtime("macro " + name + " takes no keyword argument " + key);
  }
  Value varargs_value;
  if (def.catch_varargs) {
    std::vector<Value> rest;
    for (size_t i = n; i < args.positional.size(); ++i) rest.push_back(args.positional[i]);
    varargs_value = Value::tuple(std::move(rest));
  } else if (args.positional.size() > n) {
    std::string name;
    py::append_repr(def.name, &name);
    throw_runtime("macro " + name + " takes not more than " + std::to_string(n) + " argument(s)");
  }
  if (++call_depth_ > options_.limits.max_call_depth) {
    --call_depth_;
    throw_limit("macro calls nested deeper than " + std::to_string(options_.limits.max_call_depth) +
                " levels");
  }
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    for (size_t i = 0; i < n; ++i) {
      const MacroParam& p = def.params[i];
      if (values[i]) {
        frame->set(p.symbol, std::move(*values[i]));
      } else if (p.default_value) {
        frame->set(p.symbol, eval(*p.default_value, frame));
      } else {
        UndefinedInfo info;
        std::string quoted;
        py::append_repr(p.name, &quoted);
        info.hint = "parameter " + quoted + " was not provided";
        info.name = p.name;
        frame->set(p.symbol, Value::undefined(std::move(info)));
      }
    }
    if (def.uses_caller && !found_caller) frame->set(program_.caller_symbol, caller);
    if (def.catch_kwargs) frame->set(program_.kwargs_symbol, kwargs_value);
    if (def.catch_varargs) frame->set(program_.varargs_symbol, varargs_value);
    exec_body(def.body, frame);
  } catch (...) {
    out_ = saved;
    --call_depth_;
    throw;
  }
  out_ = saved;
  --call_depth_;
  return make_string(std::move(buffer));
}

// ---- expressions ----

Value Interpreter::global(int symbol) {
  for (const auto& [sym, v] : globals_) {
    if (sym == symbol) return v;
  }
  std::optional<Value> g = make_global(program_.symbols[static_cast<size_t>(symbol)]);
  if (!g) return Value();
  globals_.emplace_back(symbol, *g);
  return *g;
}

Value Interpreter::lookup(const NameExpr& name, const FramePtr& frame) {
  if (const Value* v = frame->lookup(name.symbol)) return *v;
  Value g = global(name.symbol);
  if (!g.is_undefined()) return g;
  UndefinedInfo info;
  info.name = name.name;
  return Value::undefined(std::move(info));
}

Value Interpreter::getattr(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case ValueKind::kUndefined:
      fail_undefined(obj);
    case ValueKind::kObject: {
      if (name.substr(0, 2) == "__") return unsafe_undefined(obj, name);
      if (auto v = obj.as_object()->get_attr(name)) return std::move(*v);
      return missing_attribute(obj, name);
    }
    default:
      break;
  }
  if (name.substr(0, 2) == "__") return unsafe_undefined(obj, name);
  if (obj.is_number()) {
    // The data attributes of Python's int and float.
    if (name == "real") return obj.is_float() ? obj : Value::integer(obj.as_int());
    if (name == "imag") return obj.is_float() ? Value::number(0.0) : Value::integer(0);
    if (name == "numerator" && obj.is_integral()) return Value::integer(obj.as_int());
    if (name == "denominator" && obj.is_integral()) return Value::integer(1);
  }
  switch (method_access(obj, name)) {
    case MethodAccess::kSafe:
      return Value::object(std::make_shared<BoundMethod>(obj, std::string(name)));
    case MethodAccess::kUnsafe:
      return unsafe_undefined(obj, name);
    case MethodAccess::kNone:
      break;
  }
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(name)) return *v;
  }
  return missing_attribute(obj, name);
}

Value Interpreter::getitem(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case ValueKind::kUndefined:
      fail_undefined(obj);
    case ValueKind::kDict:
      if (const Value* v = obj.as_dict().find(key)) return *v;
      break;
    case ValueKind::kList:
      if (key.is_integral()) {
        const auto& items = obj.as_list();
        int64_t i = key.as_int();
        const auto n = static_cast<int64_t>(items.size());
        if (i < 0) i += n;
        if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
        return missing_item(obj, key);
      }
      break;
    case ValueKind::kString:
      if (key.is_integral()) {
        const std::string& s = obj.as_string();
        int64_t i = key.as_int();
        const int64_t n = static_cast<int64_t>(py::length(s));
        if (i < 0) i += n;
        if (i >= 0 && i < n) return Value::string(py::slice(s, true, i, true, i + 1, 1));
        return missing_item(obj, key);
      }
      break;
    default:
      break;
  }
  if (key.is_string()) {
    // Jinja falls back to the attribute of that name.
    const std::string& name = key.as_string();
    if (obj.is_object()) {
      if (name.substr(0, 2) == "__") return unsafe_undefined(obj, name);
      if (auto v = obj.as_object()->get_attr(name)) return std::move(*v);
      return missing_attribute(obj, name);
    }
    if (name.substr(0, 2) == "__") return unsafe_undefined(obj, name);
    switch (method_access(obj, name)) {
      case MethodAccess::kSafe:
        return Value::object(std::make_shared<BoundMethod>(obj, name));
      case MethodAccess::kUnsafe:
        return unsafe_undefined(obj, name);
      case MethodAccess::kNone:
        break;
    }
  }
  if (obj.is_dict() && key.is_list() && !key.is_tuple()) {
    throw_runtime("unhashable type: 'list'");
  }
  return missing_item(obj, key);
}

Value Interpreter::eval_slice(const Value& obj, const SliceExpr& s, const FramePtr& frame) {
  auto bound = [&](const ExprPtr& e, bool* has) -> int64_t {
    *has = false;
    if (!e) return 0;
    const Value v = eval(*e, frame);
    if (v.is_none()) return 0;
    if (!v.is_integral()) {
      throw_runtime("slice indices must be integers or None or have an __index__ method");
    }
    *has = true;
    return v.as_int();
  };
  bool has_start, has_stop, has_step;
  const int64_t start = bound(s.start, &has_start);
  const int64_t stop = bound(s.stop, &has_stop);
  int64_t step = bound(s.step, &has_step);
  if (!has_step) step = 1;
  if (step == 0) throw_runtime("slice step cannot be zero");
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_string()) {
    return make_string(py::slice(obj.as_string(), has_start, start, has_stop, stop, step),
                       obj.is_markup());
  }
  if (!obj.is_list()) {
    if (obj.is_dict()) throw_runtime("unhashable type: 'slice'");
    UndefinedInfo info;
    info.owner_type = object_type_repr(obj);
    info.name = "slice(...)";
    info.name_is_key = true;
    return Value::undefined(std::move(info));
  }
  const auto& items = obj.as_list();
  const auto n = static_cast<int64_t>(items.size());
  auto adjust = [&](bool has, int64_t v, int64_t dflt) {
    if (!has) return dflt;
    if (v < 0) {
      v += n;
      if (v < 0) v = step < 0 ? -1 : 0;
    } else if (v >= n) {
      v = step < 0 ? n - 1 : n;
    }
    return v;
  };
  const int64_t b = adjust(has_start, start, step < 0 ? n - 1 : 0);
  const int64_t e = adjust(has_stop, stop, step < 0 ? -1 : n);
  std::vector<Value> out;
  if (step > 0) {
    for (int64_t i = b; i < e; i += step) out.push_back(items[static_cast<size_t>(i)]);
  } else {
    for (int64_t i = b; i > e; i += step) out.push_back(items[static_cast<size_t>(i)]);
  }
  charge_items(out.size());
  return obj.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

void Interpreter::eval_args(const CallArgsExpr& in, const FramePtr& frame, CallArgs* out) {
  out->positional.reserve(in.positional.size());
  for (const auto& p : in.positional) out->positional.push_back(eval(*p, frame));
  for (const auto& [k, v] : in.keywords) out->keywords.emplace_back(k, eval(*v, frame));
  if (in.dyn_args) {
    for (Value& v : iterate(eval(*in.dyn_args, frame))) out->positional.push_back(std::move(v));
  }
  if (in.dyn_kwargs) {
    const Value d = eval(*in.dyn_kwargs, frame);
    if (!d.is_dict()) throw_runtime("argument after ** must be a mapping, not " + type_name(d));
    for (const auto& [k, v] : d.as_dict().entries()) {
      if (!k.is_string()) throw_runtime("keywords must be strings");
      out->keywords.emplace_back(k.as_string(), v);
    }
  }
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (callee.is_object() && callee.as_object()->is_callable()) {
    // Hold the object alive for the call.
    const std::shared_ptr<Object> keep = callee.object_ptr();
    return keep->call(*this, args);
  }
  throw_runtime("'" + type_name(callee) + "' object is not callable");
}

Value Interpreter::eval_call(const CallExpr& c, const FramePtr& frame) {
  if (c.callee->kind == ExprKind::kGetattr) {
    // obj.method(...) without materializing a bound method.
    const auto& g = static_cast<const GetattrExpr&>(*c.callee);
    const Value obj = eval(*g.object, frame);
    if (!obj.is_undefined() && !obj.is_object() && g.attr.substr(0, 2) != "__") {
      switch (method_access(obj, g.attr)) {
        case MethodAccess::kSafe: {
          CallArgs args;
          eval_args(c.args, frame, &args);
          return call_method(*this, obj, g.attr, args);
        }
        case MethodAccess::kUnsafe:
          fail_undefined(unsafe_undefined(obj, g.attr));
        case MethodAccess::kNone:
          break;
      }
    }
    const Value callee = getattr(obj, g.attr);
    CallArgs args;
    eval_args(c.args, frame, &args);
    return call(callee, args);
  }
  const Value callee = eval(*c.callee, frame);
  CallArgs args;
  eval_args(c.args, frame, &args);
  return call(callee, args);
}

bool Interpreter::run_test(const std::string& name, const Value& value, CallArgs& args) {
  const TestFn fn = find_test(name);
  if (!fn) {
    std::string q;
    py::append_repr(name, &q);
    throw_runtime("No test named " + q + ".");
  }
  return fn(*this, value, args);
}

Value Interpreter::run_filter(const std::string& name, const Value& value, CallArgs& args) {
  const FilterFn fn = find_filter(name);
  if (!fn) {
    std::string q;
    py::append_repr(name, &q);
    throw_runtime("No filter named " + q + ".");
  }
  return fn(*this, value, args);
}

Value Interpreter::eval_filter(const FilterExpr& f, const FramePtr& frame,
                               const Value* block_input) {
  Value input;
  if (!f.input) {
    input = *block_input;
  } else if (f.input->kind == ExprKind::kFilter && block_input) {
    input = eval_filter(static_cast<const FilterExpr&>(*f.input), frame, block_input);
  } else {
    input = eval(*f.input, frame);
  }
  if (!f.fn) {
    std::string q;
    py::append_repr(f.name, &q);
    throw_runtime("No filter named " + q + " found.");
  }
  CallArgs args;
  eval_args(f.args, frame, &args);
  return f.fn(*this, input, args);
}

Value Interpreter::binary_op(BinaryOp op, const Value& a, const Value& b) {
  return binary_operator(*this, op, a, b);
}

Value Interpreter::eval_compare(const CompareExpr& c, const FramePtr& frame) {
  Value left = eval(*c.left, frame);
  for (const auto& [op, rhs_expr] : c.ops) {
    Value right = eval(*rhs_expr, frame);
    bool ok = false;
    switch (op) {
      case CompareOp::kEq:
        ok = equal(left, right);
        break;
      case CompareOp::kNe:
        ok = !equal(left, right);
        break;
      case CompareOp::kLt:
        ok = less(left, right);
        break;
      case CompareOp::kGt:
        ok = less(right, left);
        break;
      case CompareOp::kLe:
        ok = less(left, right) || equal(left, right);
        break;
      case CompareOp::kGe:
        ok = less(right, left) || equal(left, right);
        break;
      case CompareOp::kIn:
        ok = contains(right, left);
        break;
      case CompareOp::kNotIn:
        ok = !contains(right, left);
        break;
    }
    if (!ok) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval(const Expr& e, const FramePtr& frame) {
  DepthGuard guard(this);
  switch (e.kind) {
    case ExprKind::kConst:
      return static_cast<const ConstExpr&>(e).value;
    case ExprKind::kName:
      return lookup(static_cast<const NameExpr&>(e), frame);
    case ExprKind::kGetattr: {
      const auto& g = static_cast<const GetattrExpr&>(e);
      return getattr(eval(*g.object, frame), g.attr);
    }
    case ExprKind::kGetitem: {
      const auto& g = static_cast<const GetitemExpr&>(e);
      const Value obj = eval(*g.object, frame);
      if (g.key->kind == ExprKind::kSlice) {
        return eval_slice(obj, static_cast<const SliceExpr&>(*g.key), frame);
      }
      return getitem(obj, eval(*g.key, frame));
    }
    case ExprKind::kSlice:
      throw_runtime("a slice outside a subscript");
    case ExprKind::kCall:
      return eval_call(static_cast<const CallExpr&>(e), frame);
    case ExprKind::kFilter:
      return eval_filter(static_cast<const FilterExpr&>(e), frame, nullptr);
    case ExprKind::kTest: {
      const auto& t = static_cast<const TestExpr&>(e);
      const Value input = eval(*t.input, frame);
      if (!t.fn) {
        std::string q;
        py::append_repr(t.name, &q);
        throw_runtime("No test named " + q + " found.");
      }
      CallArgs args;
      eval_args(t.args, frame, &args);
      return Value::boolean(t.fn(*this, input, args));
    }
    case ExprKind::kNot:
      return Value::boolean(!truthy(eval(*static_cast<const UnaryExpr&>(e).operand, frame)));
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      const Value v = eval(*static_cast<const UnaryExpr&>(e).operand, frame);
      if (v.is_undefined()) fail_undefined(v);
      const bool neg = e.kind == ExprKind::kNeg;
      if (v.is_integral()) {
        if (neg && v.as_int() == INT64_MIN) fail_integer_overflow();
        return Value::integer(neg ? -v.as_int() : v.as_int());
      }
      if (v.is_float()) return Value::number(neg ? -v.as_float() : v.as_float());
      throw_runtime(std::string("bad operand type for unary ") + (neg ? "-" : "+") + ": '" +
                    type_name(v) + "'");
    }
    case ExprKind::kBinary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      const Value l = eval(*b.left, frame);
      const Value r = eval(*b.right, frame);
      return binary_op(b.op, l, r);
    }
    case ExprKind::kAnd: {
      const auto& l = static_cast<const LogicalExpr&>(e);
      Value left = eval(*l.left, frame);
      if (!truthy(left)) return left;
      return eval(*l.right, frame);
    }
    case ExprKind::kOr: {
      const auto& l = static_cast<const LogicalExpr&>(e);
      Value left = eval(*l.left, frame);
      if (truthy(left)) return left;
      return eval(*l.right, frame);
    }
    case ExprKind::kConcat: {
      std::string s;
      for (const auto& p : static_cast<const ConcatExpr&>(e).parts) {
        const Value v = eval(*p, frame);
        if (v.is_string()) {
          s += v.as_string();
        } else {
          append_str(v, &s, max_string_bytes());
        }
        if (s.size() > options_.limits.max_output_bytes) make_string(std::move(s));
      }
      return make_string(std::move(s));
    }
    case ExprKind::kCompare:
      return eval_compare(static_cast<const CompareExpr&>(e), frame);
    case ExprKind::kCondExpr: {
      const auto& c = static_cast<const CondExpr&>(e);
      if (truthy(eval(*c.test, frame))) return eval(*c.then_expr, frame);
      if (c.else_expr) return eval(*c.else_expr, frame);
      return Value::undefined_hint("the inline if-expression on line " + std::to_string(e.line) +
                                   " evaluated to false and no else section was defined.");
    }
    case ExprKind::kList:
    case ExprKind::kTuple: {
      const auto& s = static_cast<const SequenceExpr&>(e);
      std::vector<Value> items;
      items.reserve(s.items.size());
      for (const auto& i : s.items) items.push_back(eval(*i, frame));
      return e.kind == ExprKind::kTuple ? Value::tuple(std::move(items))
                                        : Value::list(std::move(items));
    }
    case ExprKind::kDict: {
      DictData d;
      for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
        Value key = eval(*k, frame);
        d.set(std::move(key), eval(*v, frame));
      }
      return Value::dict(std::move(d));
    }
  }
  return Value();
}

}  // namespace strata::jinja
