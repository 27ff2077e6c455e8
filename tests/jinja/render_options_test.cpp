// Hostile templates (a --chat-template can come from a user): every way to
// spend time or memory ends in a kLimit error, never a crash or a hang.
#include <gtest/gtest.h>

#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {

using testing::error_kind;
using testing::render;

TEST(Limits, InfiniteRecursionStops) {
  EXPECT_EQ(error_kind("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}"), ErrorKind::kLimit);
  EXPECT_EQ(
      error_kind("{% macro m(n) %}{{ caller() }}{% endmacro %}"
                 "{% macro r() %}{% call m(1) %}{{ r() }}{% endcall %}{% endmacro %}{{ r() }}"),
      ErrorKind::kLimit);
  EXPECT_EQ(
      error_kind("{% set t = [{'c': []}] %}{% for x in t recursive %}{{ loop(t) }}{% endfor %}"),
      ErrorKind::kLimit);
}

TEST(Limits, LoopIterationsAreBounded) {
  EXPECT_EQ(error_kind(
                "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
            ErrorKind::kLimit);
  RenderOptions small;
  small.limits.max_iterations = 1000;
  EXPECT_EQ(error_kind("{% for i in range(2000) %}{% endfor %}", {}, small), ErrorKind::kLimit);
  EXPECT_EQ(render("{% for i in range(500) %}{% endfor %}ok", {}, small), "ok");
}

TEST(Limits, OutputAndStringSizesAreBounded) {
  RenderOptions small;
  small.limits.max_output_bytes = 1000;
  EXPECT_EQ(error_kind("{% for i in range(200) %}0123456789{% endfor %}", {}, small),
            ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{{ 'x' * 100000000000 }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{{ ('x' * 1000000).replace('x', 'yyyyyyyyyyyyyyyyyyyyyy') }}"),
            ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{{ 'a'.center(1000000000) }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{{ 'x'|indent(1000000000) }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{{ '%9999999999s' % 'x' }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{{ [1] * 100000000000 }}"), ErrorKind::kLimit);
  // Quadratic growth through a namespace is cut off by the work budget.
  EXPECT_EQ(error_kind("{% set ns = namespace(s='x' * 1000) %}{% for i in range(100000) %}"
                       "{% set ns.s = ns.s ~ ns.s[:1000] %}{% endfor %}"),
            ErrorKind::kLimit);
}

TEST(Limits, PrintingSharedValuesIsBounded) {
  // A million references to one long string: small in memory, enormous as
  // text. Printing, joining, repr and tojson stop at the output bound.
  const std::string setup = "{% set big = ['x' * 100000] * 1000000 %}";
  EXPECT_EQ(error_kind(setup + "{{ big }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind(setup + "{{ big|tojson }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind(setup + "{{ big|join }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind(setup + "{{ big|string|length }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind(setup + "{{ '%s' % (big,) }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind(setup + "{% set ns = namespace(b=big) %}{{ ns }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{% for c in 'x' * 8000000 %}{% endfor %}"), ErrorKind::kLimit);
}

TEST(Limits, IntegerOverflowIsAnErrorNotUndefinedBehaviour) {
  EXPECT_EQ(error_kind("{{ 9223372036854775807 + 1 }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{{ 2 ** 64 }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{{ -9223372036854775807 - 2 }}"), ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{{ 99999999999999999999 }}"), ErrorKind::kLimit);
  EXPECT_EQ(render("{{ (-9223372036854775807 - 1) // -1 if false else 'ok' }}"), "ok");
  EXPECT_EQ(error_kind("{{ (-9223372036854775807 - 1) // -1 }}"), ErrorKind::kLimit);
}

TEST(Limits, NestingIsBounded) {
  // Only namespaces let a template build nesting step by step.
  EXPECT_EQ(error_kind("{% set ns = namespace(x=[]) %}{% for i in range(2000) %}"
                       "{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x|length }}"),
            ErrorKind::kLimit);
  EXPECT_EQ(error_kind("{% set ns = namespace(cur=none) %}{% for i in range(100000) %}"
                       "{% set ns.cur = namespace(prev=ns.cur) %}{% endfor %}{{ ns }}"),
            ErrorKind::kLimit);
  // A namespace holding itself prints as Python prints a recursive dict.
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% set ns.self = ns %}{{ ns }}"),
            "<Namespace {'a': 1, 'self': <Namespace {...}>}>");
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.l = [ns] %}{{ ns }}"),
            "<Namespace {'l': [<Namespace {...}>]}>");
  // Input JSON nested past the bound is refused before any recursion.
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "[";
  for (int i = 0; i < 5000; ++i) deep += "]";
  EXPECT_THROW(value_from_json(nlohmann::ordered_json::parse(deep)), TemplateException);
}

TEST(Limits, SelfReferencesDoNotLeak) {
  // Cycles through namespaces and macro frames are broken after the render
  // (LeakSanitizer in the fuzz build checks this).
  EXPECT_EQ(
      render("{% set ns = namespace() %}{% set ns.self = ns %}{% macro m() %}{{ ns }}{% endmacro %}"
             "{% set ns.m = m %}ok"),
      "ok");
  EXPECT_EQ(
      render("{% for i in range(3) %}{% macro m() %}{{ i }}{% endmacro %}{{ m() }}{% endfor %}"),
      "012");
}

TEST(Limits, SourceSizeIsBounded) {
  ParseOptions options;
  options.max_source_bytes = 100;
  auto t = Template::parse(std::string(200, 'x'), options);
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.error().kind(), ErrorKind::kLimit);
}

}  // namespace
}  // namespace strata::jinja
