// Python's binary operators as Jinja evaluates them (outputs are Jinja2's).
#include "jinja/operators.h"

#include <gtest/gtest.h>

#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {

using testing::error_kind;
using testing::render;

TEST(Operators, Arithmetic) {
  EXPECT_EQ(
      render(
          "{{ 7 + 2 }} {{ 7 - 2 }} {{ 7 * 2 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ 7 % 3 }} "
          "{{ 2 ** 10 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7.5 % -2 }} {{ 2 ** -1 }} {{ true + 1 }}"),
      "9 5 14 3.5 3 1 1024 -4 2 -0.5 0.5 2");
  EXPECT_EQ(error_kind("{{ 1 / 0 }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ 1 // 0 }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ 2 ** 64 }}"), ErrorKind::kLimit);
}

TEST(Operators, SequencesAndStrings) {
  EXPECT_EQ(render("{{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 2 }} {{ [0] * 2 }} {{ 'x' * -1 }}|"),
            "ab [1, 2] abab [0, 0] |");
  EXPECT_EQ(render("{{ ('<a>'|safe) + '<b>' }}"), "<a>&lt;b&gt;");
  EXPECT_EQ(error_kind("{{ 'a' + 1 }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ [1] + (1,) }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ missing + 1 }}"), ErrorKind::kRuntime);
}

}  // namespace
}  // namespace strata::jinja
