// The globals of Hugging Face's environment: Jinja's range (the sandbox's,
// capped at 100000 items), dict, namespace, cycler and joiner, and
// transformers' raise_exception and strftime_now.
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/template_error.h"
#include "jinja/value_format.h"

namespace strata::jinja {
namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

Value g_range(Interpreter& interp, CallArgs& args) {
  if (!args.keywords.empty()) throw_runtime("range() takes no keyword arguments");
  const size_t n = args.positional.size();
  if (n < 1 || n > 3) {
    throw_runtime("range expected at least 1 argument, got " + std::to_string(n));
  }
  int64_t start = 0, stop = 0, step = 1;
  if (n == 1) {
    stop = to_int_arg(args.positional[0], "range");
  } else {
    start = to_int_arg(args.positional[0], "range");
    stop = to_int_arg(args.positional[1], "range");
    if (n == 3) step = to_int_arg(args.positional[2], "range");
  }
  if (step == 0) throw_runtime("range() arg 3 must not be zero");
  // len(range) without overflow.
  __int128 count = 0;
  if (step > 0 && stop > start) count = (static_cast<__int128>(stop) - start + step - 1) / step;
  if (step < 0 && stop < start) count = (static_cast<__int128>(start) - stop - step - 1) / -step;
  if (count > kMaxRange) {
    throw_runtime("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  }
  interp.charge_items(static_cast<size_t>(count));
  std::vector<Value> out;
  out.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
    out.push_back(Value::integer(start + i * step));
  return Value::list(std::move(out));
}

// dict(*args, **kwargs).
DictData make_dict(Interpreter& interp, CallArgs& args, const char* name) {
  if (args.positional.size() > 1) {
    throw_runtime(std::string(name) + " expected at most 1 argument, got " +
                  std::to_string(args.positional.size()));
  }
  DictData d;
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else {
      for (const Value& pair : iterate(src)) {
        const std::vector<Value> kv = iterate(pair);
        if (kv.size() != 2) {
          throw_runtime("dictionary update sequence element has length " +
                        std::to_string(kv.size()) + "; 2 is required");
        }
        d.set(kv[0], kv[1]);
      }
    }
    interp.charge_items(d.size());
  }
  for (auto& [k, v] : args.keywords) d.set(Value::string(k), v);
  return d;
}

Value g_dict(Interpreter& interp, CallArgs& args) {
  return Value::dict(make_dict(interp, args, "dict"));
}

Value g_namespace(Interpreter& interp, CallArgs& args) {
  auto ns = std::make_shared<NamespaceObject>(make_dict(interp, args, "namespace"));
  interp.track_namespace(ns);
  return Value::object(ns);
}

class CyclerObject : public Object {
 public:
  explicit CyclerObject(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "Cycler"; }
  std::string type_repr() const override { return "jinja2.utils.Cycler object"; }
  std::string repr() const override { return "<jinja2.utils.Cycler object>"; }
  std::optional<Value> get_attr(std::string_view name) const override {
    if (name == "current") return items_[pos_];
    if (name == "next" || name == "reset") {
      return Value::object(std::make_shared<Method>(self_.lock(), std::string(name)));
    }
    return std::nullopt;
  }
  void set_self(const std::shared_ptr<CyclerObject>& self) { self_ = self; }

 private:
  class Method : public Object {
   public:
    Method(std::shared_ptr<CyclerObject> c, std::string n)
        : cycler_(std::move(c)), name_(std::move(n)) {}
    std::string type_name() const override { return "method"; }
    std::string type_repr() const override { return "method object"; }
    std::string repr() const override { return "<bound method Cycler." + name_ + ">"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter&, CallArgs& args) override {
      if (!args.positional.empty() || !args.keywords.empty())
        throw_runtime(name_ + "() takes no arguments");
      if (name_ == "reset") {
        cycler_->pos_ = 0;
        return Value::none();
      }
      Value v = cycler_->items_[cycler_->pos_];
      cycler_->pos_ = (cycler_->pos_ + 1) % cycler_->items_.size();
      return v;
    }

   private:
    std::shared_ptr<CyclerObject> cycler_;
    std::string name_;
  };

  std::vector<Value> items_;
  size_t pos_ = 0;
  std::weak_ptr<CyclerObject> self_;
};

Value g_cycler(Interpreter&, CallArgs& args) {
  if (!args.keywords.empty()) throw_runtime("cycler() takes no keyword arguments");
  if (args.positional.empty()) throw_runtime("at least one item has to be provided");
  auto c = std::make_shared<CyclerObject>(args.positional);
  c->set_self(c);
  return Value::object(c);
}

class JoinerObject : public Object {
 public:
  explicit JoinerObject(std::string sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  std::string type_repr() const override { return "jinja2.utils.Joiner object"; }
  std::string repr() const override { return "<jinja2.utils.Joiner object>"; }
  bool is_callable() const override { return true; }
  Value call(Interpreter&, CallArgs& args) override {
    if (!args.positional.empty() || !args.keywords.empty())
      throw_runtime("joiner takes no arguments");
    if (!used_) {
      used_ = true;
      return Value::string("");
    }
    return Value::string(sep_);
  }

 private:
  std::string sep_;
  bool used_ = false;
};

Value g_joiner(Interpreter& interp, CallArgs& args) {
  ArgBinder b("joiner", args, {"sep"});
  return Value::object(std::make_shared<JoinerObject>(
      b.get(0) ? to_str(*b.get(0), interp.max_string_bytes()) : ", "));
}

Value g_raise_exception(Interpreter& interp, CallArgs& args) {
  ArgBinder b("raise_exception", args, {"message"});
  if (!b.get(0)) {
    throw_runtime("raise_exception() missing 1 required positional argument: 'message'");
  }
  throw TemplateException(
      TemplateError(ErrorKind::kRaised, to_str(*b.get(0), interp.max_string_bytes())));
}

Value g_strftime_now(Interpreter& interp, CallArgs& args) {
  ArgBinder b("strftime_now", args, {"format"});
  if (!b.get(0)) throw_runtime("strftime_now() missing 1 required positional argument: 'format'");
  if (!b.get(0)->is_string()) {
    throw_runtime("strftime() argument 1 must be str, not " + type_name(*b.get(0)));
  }
  const std::string& format = b.get(0)->as_string();
  std::tm tm{};
  if (interp.options().now) {
    tm = interp.options().now();
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, &tm);
  }
  if (format.empty()) return Value::string("");
  if (format.size() > 4096) throw_limit("strftime format too long");
  // strftime returns 0 both for "too small" and for an empty result; grow
  // the buffer a few times, then accept empty.
  std::string buffer(format.size() * 8 + 64, '\0');
  for (int attempt = 0; attempt < 4; ++attempt) {
    const size_t n = std::strftime(buffer.data(), buffer.size(), format.c_str(), &tm);
    if (n > 0) {
      buffer.resize(n);
      return interp.make_string(std::move(buffer));
    }
    buffer.assign(buffer.size() * 4, '\0');
  }
  return Value::string("");
}

}  // namespace

std::optional<Value> make_global(std::string_view name) {
  BuiltinFunction::Fn fn = nullptr;
  if (name == "range") fn = g_range;
  if (name == "dict") fn = g_dict;
  if (name == "namespace") fn = g_namespace;
  if (name == "cycler") fn = g_cycler;
  if (name == "joiner") fn = g_joiner;
  if (name == "raise_exception") fn = g_raise_exception;
  if (name == "strftime_now") fn = g_strftime_now;
  if (!fn) return std::nullopt;
  return Value::object(std::make_shared<BuiltinFunction>(std::string(name), fn));
}

}  // namespace strata::jinja
