// The parser: precedence, statement forms and Jinja's syntax errors
// (including the compile-time checks of its code generator).
#include "jinja/parser.h"

#include <gtest/gtest.h>

#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {

using testing::error_kind;
using testing::render;

TEST(Parser, Precedence) {
  EXPECT_EQ(render("{{ -2 ** 2 }} {{ 2 + 3 * 4 }} {{ 2 ** 3 ** 2 }} {{ 10 - 2 - 3 }}"),
            "4 14 64 5");
  EXPECT_EQ(render("{{ 'a' ~ 2 * 3 }} {{ -1|abs }} {{ not 1 == 2 }}"), "a6 1 True");
  EXPECT_EQ(render("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}"), "True False");
  EXPECT_EQ(render("{{ 'y' if 0 else 'n' if 1 else 'z' }}"), "n");
  EXPECT_EQ(error_kind("{{ 1 + 2 ~ 3 }}"), ErrorKind::kRuntime);  // 1 + '23'
}

TEST(Parser, TestsTakeOneBareArgument) {
  EXPECT_EQ(render("{{ 9 is divisibleby 3 }} {{ none is sameas none }} {{ 'a' is in 'abc' }}"),
            "True True True");
  EXPECT_EQ(render("{{ x is not defined and true }}"), "True");
  EXPECT_EQ(error_kind("{{ 1 is odd is even }}"), ErrorKind::kSyntax);
  // `if` after a test is taken as its argument, as in Jinja.
  EXPECT_EQ(error_kind("{{ 1 is defined if false else 'ok' }}"), ErrorKind::kSyntax);
}

TEST(Parser, TuplesAndSubscripts) {
  EXPECT_EQ(render("{{ 1, 'a' }}|{{ (1,) }}|{{ () }}"), "(1, 'a')|(1,)|()");
  EXPECT_EQ(render("{{ [1, 2, 3][::-1] }} {{ 'abc'[1:] }} {{ {(1, 2): 'v'}[1, 2] }}"),
            "[3, 2, 1] bc v");
  EXPECT_EQ(render("{{ [1, 2,] }} {{ {'a': 1,} }}"), "[1, 2] {'a': 1}");
}

TEST(Parser, CallArguments) {
  EXPECT_EQ(render("{{ dict(*[[['a', 1]]]) }} {{ dict(**{'b': 2}) }} {{ '{}-{}'.format(*'xy') }}"),
            "{'a': 1} {'b': 2} x-y");
  EXPECT_EQ(error_kind("{{ f(a=1, 2) }}"), ErrorKind::kSyntax);
}

TEST(Parser, SyntaxErrors) {
  for (const char* bad :
       {"{% if true %}x", "{{ x ", "{% frobnicate %}", "{% if true %}{% endfor %}", "{{ 1 + }}",
        "{{ }}", "{% for in x %}{% endfor %}", "{% set 1 = 2 %}",
        "{% macro m(a=1, b) %}{% endmacro %}", "{% endif %}", "{% call m %}{% endcall %}",
        "{{ x|tojson( }}"}) {
    EXPECT_EQ(error_kind(bad), ErrorKind::kSyntax) << bad;
  }
}

TEST(Parser, UnclosedBlockMessageNamesTheTags) {
  auto t = Template::parse("{% for x in y %}\n{% if x %}");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.error().message(),
            "Unexpected end of template. Jinja was looking for the following tags: 'elif' or "
            "'else' or 'endif'. The innermost block that needs to be closed is 'if'.");
  EXPECT_EQ(t.error().line(), 2);
}

TEST(Parser, UnknownFilterOrTestIsASyntaxError) {
  auto t = Template::parse("{{ x|from_json }}");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.error().kind(), ErrorKind::kSyntax);
  EXPECT_EQ(t.error().message(), "No filter named 'from_json'.");
  EXPECT_EQ(error_kind("{{ 1 is nope }}"), ErrorKind::kSyntax);
  EXPECT_EQ(render("{% if false %}{{ 1 is nope }}{% endif %}ok"), "ok");
}

TEST(Parser, NestingIsBounded) {
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "(";
  deep += "1";
  for (int i = 0; i < 300; ++i) deep += ")";
  auto t = Template::parse("{{ " + deep + " }}");
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.error().kind(), ErrorKind::kLimit);
  std::string blocks;
  for (int i = 0; i < 300; ++i) blocks += "{% if true %}";
  EXPECT_EQ(Template::parse(blocks).error().kind(), ErrorKind::kLimit);
  // Long chains nest too (one level per link), so the tree stays shallow.
  std::string chain = "{{ 1";
  for (int i = 0; i < 100000; ++i) chain += " + 1";
  EXPECT_EQ(Template::parse(chain + " }}").error().kind(), ErrorKind::kLimit);
  std::string filters = "{{ x";
  for (int i = 0; i < 100000; ++i) filters += "|string";
  EXPECT_EQ(Template::parse(filters + " }}").error().kind(), ErrorKind::kLimit);
  // Real templates nest far less.
  EXPECT_TRUE(Template::parse("{{ ((((((((((1)))))))))) }}").is_ok());
  std::string fine = "{{ 1";
  for (int i = 0; i < 100; ++i) fine += " + 1";
  EXPECT_TRUE(Template::parse(fine + " }}").is_ok());
}

TEST(Parser, NamesAreCollected) {
  auto t = Template::parse("{% for m in messages %}{{ m.content }}{% endfor %}{{ bos_token }}");
  ASSERT_TRUE(t.is_ok());
  const auto& names = t->names();
  EXPECT_NE(std::find(names.begin(), names.end(), "messages"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "bos_token"), names.end());
}

}  // namespace
}  // namespace strata::jinja
