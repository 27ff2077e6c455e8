// Frame: one scope of a render. The template's top level has one (its parent
// holds the render's variables); every for-loop iteration, macro call and
// with/filter/set block opens another whose parent is the enclosing frame;
// macros keep a reference to the frame they were defined in, so they see it
// as it is when they are called (Jinja's late-binding closures).
//
// Owned by shared_ptr (macros and loops hold their frames); used by one
// render on one thread. Variables are few per frame, so a vector is searched.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace strata::jinja {

struct Frame;
using FramePtr = std::shared_ptr<Frame>;

struct Frame {
  explicit Frame(FramePtr p) : parent(std::move(p)) {}
  FramePtr parent;
  std::vector<std::pair<int, Value>> vars;

  const Value* lookup(int symbol) const {
    for (const Frame* f = this; f; f = f->parent.get()) {
      for (const auto& [sym, v] : f->vars) {
        if (sym == symbol) return &v;
      }
    }
    return nullptr;
  }
  void set(int symbol, Value v) {
    for (auto& [sym, value] : vars) {
      if (sym == symbol) {
        value = std::move(v);
        return;
      }
    }
    vars.emplace_back(symbol, std::move(v));
  }
};

}  // namespace strata::jinja
