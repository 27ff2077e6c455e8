// Python's str()/repr() of values, float repr, and json.dumps as
// transformers' tojson calls it.
#include "jinja/value_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace strata::jinja {
namespace {

TEST(ValueFormat, FloatReprIsPythons) {
  EXPECT_EQ(float_repr(1.0), "1.0");
  EXPECT_EQ(float_repr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(float_repr(1e16), "1e+16");
  EXPECT_EQ(float_repr(1e15), "1000000000000000.0");
  EXPECT_EQ(float_repr(1e-5), "1e-05");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(123456789.125), "123456789.125");
  EXPECT_EQ(float_repr(1.5e300), "1.5e+300");
  EXPECT_EQ(float_repr(5e-324), "5e-324");
  EXPECT_EQ(float_repr(INFINITY), "inf");
  EXPECT_EQ(float_repr(NAN), "nan");
}

TEST(ValueFormat, StrAndRepr) {
  const Value list = Value::list({Value::integer(1), Value::string("it's"), Value::none(),
                                  Value::boolean(true), Value::number(2.5), Value()});
  EXPECT_EQ(to_str(list), "[1, \"it's\", None, True, 2.5, Undefined]");
  EXPECT_EQ(to_str(Value::tuple({Value::integer(1)})), "(1,)");
  EXPECT_EQ(to_str(Value::tuple({})), "()");
  DictData d;
  d.set(Value::string("b"), Value::integer(1));
  d.set(Value::integer(2), Value::list({}));
  EXPECT_EQ(to_str(Value::dict(d)), "{'b': 1, 2: []}");
  EXPECT_EQ(to_str(Value()), "");
  EXPECT_EQ(to_repr(Value::markup("<a>")), "Markup('<a>')");
}

TEST(ValueFormat, JsonDumps) {
  const Value v = value_from_json(nlohmann::ordered_json::parse(
      R"({"z": [1, 2.0, "\u00e9\n"], "a": {"t": true, "n": null}, "e": {}, "l": []})"));
  std::string out;
  append_json(v, JsonOptions{}, &out);
  EXPECT_EQ(out,
            "{\"z\": [1, 2.0, \"\xC3\xA9\\n\"], \"a\": {\"t\": true, \"n\": null}, \"e\": {}, "
            "\"l\": []}");
  JsonOptions indented;
  indented.has_indent = true;
  indented.indent = "  ";
  indented.sort_keys = true;
  indented.ensure_ascii = true;
  out.clear();
  append_json(v, indented, &out);
  EXPECT_EQ(out,
            "{\n  \"a\": {\n    \"n\": null,\n    \"t\": true\n  },\n  \"e\": {},\n  \"l\": [],\n"
            "  \"z\": [\n    1,\n    2.0,\n    \"\\u00e9\\n\"\n  ]\n}");
  out.clear();
  append_json(Value::string("\xF0\x9F\x98\x80"), indented, &out);
  EXPECT_EQ(out, "\"\\ud83d\\ude00\"");
  out.clear();
  append_json(Value::number(NAN), JsonOptions{}, &out);
  EXPECT_EQ(out, "NaN");
}

TEST(ValueFormat, FromJsonKeepsOrderAndTypes) {
  const Value v = value_from_json(
      nlohmann::ordered_json::parse(R"({"b": 1, "a": 1.5, "c": 18446744073709551615})"));
  ASSERT_TRUE(v.is_dict());
  EXPECT_EQ(v.as_dict().entries()[0].first.as_string(), "b");
  EXPECT_TRUE(v.as_dict().entries()[0].second.is_int());
  EXPECT_TRUE(v.as_dict().entries()[1].second.is_float());
  EXPECT_TRUE(v.as_dict().entries()[2].second.is_float());
}

}  // namespace
}  // namespace strata::jinja
