// The objects a render creates for its statements: MacroObject (a
// {% macro %}, or the `caller` of a {% call %} block) and LoopObject (the
// `loop` variable, jinja2.runtime.LoopContext). Internal to the interpreter;
// owned by Values, used by one render on one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jinja/ast.h"
#include "jinja/frame.h"
#include "jinja/interpreter.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"

namespace strata::jinja {

// A {% macro %} (or the `caller` of a {% call %} block): its definition and
// the frame it was defined in.
class MacroObject : public Object {
 public:
  MacroObject(const MacroDef& def, FramePtr frame) : def_(def), frame_(std::move(frame)) {}
  std::string type_name() const override { return "Macro"; }
  std::string type_repr() const override { return "jinja2.runtime.Macro object"; }
  std::string repr() const override {
    std::string out = "<Macro ";
    py::append_repr(def_.name, &out);
    return out + ">";
  }
  bool is_callable() const override { return true; }
  Value call(Interpreter& interp, CallArgs& args) override {
    return interp.invoke_macro(*this, args);
  }
  std::optional<Value> get_attr(std::string_view name) const override {
    if (name == "name") return Value::string(def_.name);
    if (name == "arguments") {
      std::vector<Value> names;
      for (const auto& p : def_.params) names.push_back(Value::string(p.name));
      return Value::tuple(std::move(names));
    }
    if (name == "catch_kwargs") return Value::boolean(def_.catch_kwargs);
    if (name == "catch_varargs") return Value::boolean(def_.catch_varargs);
    if (name == "caller") return Value::boolean(def_.uses_caller);
    return std::nullopt;
  }
  const MacroDef& def() const { return def_; }
  const FramePtr& frame() const { return frame_; }

 private:
  const MacroDef& def_;
  FramePtr frame_;
};

// jinja2.runtime.LoopContext.
class LoopObject : public Object {
 public:
  LoopObject(std::shared_ptr<const std::vector<Value>> items, int depth0, const ForStmt* recursive,
             FramePtr frame)
      : items_(std::move(items)),
        depth0_(depth0),
        recursive_(recursive),
        frame_(std::move(frame)) {}
  std::string type_name() const override { return "LoopContext"; }
  std::string type_repr() const override { return "jinja2.runtime.LoopContext object"; }
  std::string repr() const override {
    return "<LoopContext " + std::to_string(index0_ + 1) + "/" + std::to_string(size()) + ">";
  }
  std::optional<int64_t> length() const override { return size(); }
  std::optional<std::vector<Value>> iterate() override { return std::nullopt; }
  bool is_callable() const override { return true; }

  std::optional<Value> get_attr(std::string_view name) const override {
    const int64_t n = size();
    if (name == "index0") return Value::integer(index0_);
    if (name == "index") return Value::integer(index0_ + 1);
    if (name == "revindex") return Value::integer(n - index0_);
    if (name == "revindex0") return Value::integer(n - index0_ - 1);
    if (name == "first") return Value::boolean(index0_ == 0);
    if (name == "last") return Value::boolean(index0_ + 1 == n);
    if (name == "length") return Value::integer(n);
    if (name == "depth") return Value::integer(depth0_ + 1);
    if (name == "depth0") return Value::integer(depth0_);
    if (name == "previtem") {
      if (index0_ == 0) return Value::undefined_hint("there is no previous item");
      return (*items_)[index0_ - 1];
    }
    if (name == "nextitem") {
      if (index0_ + 1 >= n) return Value::undefined_hint("there is no next item");
      return (*items_)[index0_ + 1];
    }
    if (name == "cycle" || name == "changed") {
      return Value::object(std::make_shared<LoopMethod>(self_.lock(), std::string(name)));
    }
    return std::nullopt;
  }

  Value call(Interpreter& interp, CallArgs& args) override {
    if (!recursive_) {
      throw_runtime("The loop must have the 'recursive' marker to be called recursively.");
    }
    if (args.positional.size() != 1 || !args.keywords.empty()) {
      throw_runtime("loop() takes exactly one argument");
    }
    return interp.recurse_loop(*recursive_, frame_, args.positional[0], depth0_ + 1);
  }

  Value cycle(CallArgs& args) const {
    if (args.positional.empty()) throw_runtime("no items for cycling given");
    return args.positional[static_cast<size_t>(index0_) % args.positional.size()];
  }
  Value changed(CallArgs& args) {
    Value now = Value::tuple(args.positional);
    if (!has_last_changed_ || !equal(last_changed_, now)) {
      has_last_changed_ = true;
      last_changed_ = std::move(now);
      return Value::boolean(true);
    }
    return Value::boolean(false);
  }

  void set_index(int64_t i) { index0_ = i; }
  void set_self(const std::shared_ptr<LoopObject>& self) { self_ = self; }

 private:
  class LoopMethod : public Object {
   public:
    LoopMethod(std::shared_ptr<LoopObject> loop, std::string name)
        : loop_(std::move(loop)), name_(std::move(name)) {}
    std::string type_name() const override { return "method"; }
    std::string type_repr() const override { return "method object"; }
    std::string repr() const override { return "<bound method LoopContext." + name_ + ">"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter& interp, CallArgs& args) override {
      (void)interp;
      return name_ == "cycle" ? loop_->cycle(args) : loop_->changed(args);
    }

   private:
    std::shared_ptr<LoopObject> loop_;
    std::string name_;
  };

  int64_t size() const { return static_cast<int64_t>(items_->size()); }

  std::shared_ptr<const std::vector<Value>> items_;
  int64_t index0_ = 0;
  int depth0_;
  const ForStmt* recursive_;
  FramePtr frame_;
  bool has_last_changed_ = false;
  Value last_changed_;
  std::weak_ptr<LoopObject> self_;
};

}  // namespace strata::jinja
