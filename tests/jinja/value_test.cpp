// Value: Python truthiness, equality, ordering, iteration and containment.
#include "jinja/value.h"

#include <gtest/gtest.h>

#include "jinja/template_error.h"

namespace strata::jinja {
namespace {

TEST(Value, Truthiness) {
  EXPECT_FALSE(truthy(Value()));
  EXPECT_FALSE(truthy(Value::none()));
  EXPECT_FALSE(truthy(Value::integer(0)));
  EXPECT_FALSE(truthy(Value::number(0.0)));
  EXPECT_FALSE(truthy(Value::string("")));
  EXPECT_FALSE(truthy(Value::list({})));
  EXPECT_TRUE(truthy(Value::string("0")));
  EXPECT_TRUE(truthy(Value::tuple({Value::none()})));
}

TEST(Value, EqualityIsPythons) {
  EXPECT_TRUE(equal(Value::integer(1), Value::number(1.0)));
  EXPECT_TRUE(equal(Value::boolean(true), Value::integer(1)));
  EXPECT_FALSE(equal(Value::list({Value::integer(1)}), Value::tuple({Value::integer(1)})));
  EXPECT_TRUE(equal(Value(), Value()));
  EXPECT_FALSE(equal(Value(), Value::none()));
  DictData a, b;
  a.set(Value::string("x"), Value::integer(1));
  a.set(Value::string("y"), Value::integer(2));
  b.set(Value::string("y"), Value::integer(2));
  b.set(Value::string("x"), Value::integer(1));
  EXPECT_TRUE(equal(Value::dict(a), Value::dict(b)));  // order does not matter for ==
}

TEST(Value, OrderingRaisesWherePythonDoes) {
  EXPECT_TRUE(less(Value::integer(1), Value::number(1.5)));
  EXPECT_TRUE(less(Value::string("B"), Value::string("a")));
  EXPECT_TRUE(less(Value::list({Value::integer(1), Value::integer(2)}),
                   Value::list({Value::integer(1), Value::integer(3)})));
  EXPECT_THROW(less(Value::string("a"), Value::integer(1)), TemplateException);
  EXPECT_THROW(less(Value(), Value::integer(1)), TemplateException);
}

TEST(Value, DictKeysHashLikePython) {
  DictData d;
  d.set(Value::integer(1), Value::string("int"));
  d.set(Value::number(1.0), Value::string("float"));
  d.set(Value::boolean(true), Value::string("bool"));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d.find(Value::integer(1))->as_string(), "bool");
  EXPECT_THROW(d.set(Value::list({}), Value::none()), TemplateException);
}

TEST(Value, IterationAndContainment) {
  const std::vector<Value> chars = iterate(Value::string("h\xC3\xA9"));
  ASSERT_EQ(chars.size(), 2u);
  EXPECT_EQ(chars[1].as_string(), "\xC3\xA9");
  EXPECT_TRUE(iterate(Value()).empty());
  EXPECT_THROW(iterate(Value::none()), TemplateException);
  EXPECT_TRUE(contains(Value::string("abc"), Value::string("bc")));
  EXPECT_FALSE(contains(Value(), Value::integer(1)));
  EXPECT_THROW(contains(Value::string("abc"), Value::integer(1)), TemplateException);
  EXPECT_EQ(length_of(Value::string("h\xC3\xA9")), 2);
  EXPECT_EQ(length_of(Value::integer(1)), std::nullopt);
}

TEST(Value, UndefinedMessagesAreJinjas) {
  UndefinedInfo var;
  var.name = "x";
  EXPECT_EQ(var.message(), "'x' is undefined");
  UndefinedInfo attr;
  attr.owner_type = "dict object";
  attr.name = "k";
  EXPECT_EQ(attr.message(), "'dict object' has no attribute 'k'");
  UndefinedInfo key;
  key.owner_type = "list object";
  key.name = "3";
  key.name_is_key = true;
  EXPECT_EQ(key.message(), "list object has no element 3");
}

}  // namespace
}  // namespace strata::jinja
