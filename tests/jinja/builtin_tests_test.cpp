// Jinja2's builtin tests, with Python's answers per kind of value.
#include <gtest/gtest.h>

#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {

using testing::error_kind;
using testing::render;

TEST(Tests, DefinedAndNone) {
  EXPECT_EQ(
      render("{{ x is defined }} {{ x is undefined }} {{ none is defined }} {{ none is none }} "
             "{{ 0 is none }} {{ d.k is defined }}",
             {{"d", {{"k", 1}}}}),
      "False True True True False True");
}

TEST(Tests, Types) {
  EXPECT_EQ(
      render("{{ 's' is string }} {{ 1 is string }} {{ {} is mapping }} {{ [] is mapping }} "
             "{{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 1 is integer }} "
             "{{ true is integer }} {{ 1.5 is float }} {{ true is boolean }} {{ 1 is boolean }}"),
      "True False True False True True True True False True True False");
  // Undefined is a sequence and iterable (it has len and iter), as in Jinja.
  EXPECT_EQ(
      render("{{ 's' is sequence }} {{ [] is sequence }} {{ {} is sequence }} {{ 1 is sequence }} "
             "{{ x is sequence }} {{ 's' is iterable }} {{ 1 is iterable }} {{ x is iterable }} "
             "{{ ([]|select) is iterable }} {{ ([]|select) is sequence }}"),
      "True True True False True True False True True False");
  EXPECT_EQ(render("{{ 'a'.upper is callable }} {{ 'a' is callable }} {{ range is callable }} "
                   "{{ x is callable }}"),
            "True False True True");
}

TEST(Tests, Comparisons) {
  EXPECT_EQ(
      render("{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} "
             "{{ 2 is eq 2 }} {{ 2 is ne 2 }} {{ 3 is gt 2 }} {{ 3 is ge 3 }} {{ 1 is lt 2 }} "
             "{{ 2 is le 1 }} {{ 'a' is in 'abc' }} {{ 2 is equalto 2 }} {{ 2.0 is even }}"),
      "True True True False True False True True True False True True True");
  EXPECT_EQ(render("{{ none is sameas none }} {{ true is sameas true }} {{ 1 is sameas true }} "
                   "{{ 100 is sameas 100 }}"),
            "True True False True");
  EXPECT_EQ(
      render("{{ 'abc' is lower }} {{ 'Abc' is lower }} {{ 'ABC' is upper }} {{ true is true }} "
             "{{ 1 is true }} {{ false is false }}"),
      "True False True True False True");
  EXPECT_EQ(render("{{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }} "
                   "{{ ('a'|safe) is escaped }} {{ 'a' is escaped }}"),
            "True False True True False");
  EXPECT_EQ(error_kind("{{ 'a' is odd }}"), ErrorKind::kRuntime);
}

TEST(Tests, NegatedAndInSelect) {
  EXPECT_EQ(render("{{ x is not defined }} {{ [1, 2, 3]|select('odd')|list }} "
                   "{{ [1, 2, 3]|reject('in', [2])|list }} {{ [1, 2]|select('==', 2)|list }}"),
            "True [1, 3] [1, 3] [2]");
}

}  // namespace
}  // namespace strata::jinja
