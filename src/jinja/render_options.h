// RenderOptions: the bounds and the clock of one Template::render call.
//
// A chat template may come from a user (--chat-template), so every way a
// template can consume time or memory is bounded, and reaching a bound is a
// kLimit error rather than a crash or a hang. The defaults are far above
// what real chat templates need (a 6-turn chat with tools renders a few
// kilobytes in well under a millisecond).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>

namespace strata::jinja {

struct RenderLimits {
  // Bytes of rendered output, and of any single string a template builds.
  size_t max_output_bytes = size_t{8} << 20;
  // Total bytes of all strings built during one render (concatenation in a
  // loop, repeated filters): bounds the work and memory of a render.
  size_t max_work_bytes = size_t{256} << 20;
  // Loop iterations plus items that filters and functions walk, per render.
  int64_t max_iterations = 2'000'000;
  // Nested macro calls (and recursive loop calls).
  int max_call_depth = 64;
  // Nested evaluation frames (expressions within statements within calls):
  // bounds the native stack a render uses.
  int max_eval_depth = 1500;
};

struct RenderOptions {
  RenderLimits limits;
  // The clock behind strftime_now(). Unset: the local time now (what
  // Hugging Face's datetime.now() gives).
  std::function<std::tm()> now;
};

}  // namespace strata::jinja
