// Template: the public parse/render boundary (no exception escapes; errors
// carry kind, message and position) and sharing one parsed template.
#include "jinja/template.h"

#include <gtest/gtest.h>

namespace strata::jinja {
namespace {

TEST(Template, ParsesOnceRendersMany) {
  auto t = Template::parse("Hello {{ name }}!");
  ASSERT_TRUE(t.is_ok());
  const Template copy = *t;  // copies share the program
  for (const char* name : {"a", "b"}) {
    auto out = copy.render({{"name", Value::string(name)}});
    ASSERT_TRUE(out.is_ok());
    EXPECT_EQ(*out, std::string("Hello ") + name + "!");
  }
  // A later duplicate variable wins.
  EXPECT_EQ(*t->render({{"name", Value::string("x")}, {"name", Value::string("y")}}), "Hello y!");
}

TEST(Template, ErrorsAreValues) {
  auto bad = Template::parse("{% if %}");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.error().kind(), ErrorKind::kSyntax);
  EXPECT_EQ(bad.error().line(), 1);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("template syntax error at line 1"), std::string::npos);
  auto t = Template::parse("{{ 1 // 0 }}");
  ASSERT_TRUE(t.is_ok());
  auto r = t->render({});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kRuntime);
  RenderOptions tight;
  tight.limits.max_output_bytes = 3;
  auto big = Template::parse("{{ 'abcd' }}");
  EXPECT_EQ(big->render({}, tight).status().code(), StatusCode::kResourceExhausted);
}

TEST(Template, InvalidUtf8IsTextNotAnError) {
  auto t = Template::parse("a\xFF{{ x }}\xC3");
  ASSERT_TRUE(t.is_ok());
  EXPECT_EQ(*t->render({{"x", Value::string("\xFE")}}), "a\xFF\xFE\xC3");
}

}  // namespace
}  // namespace strata::jinja
