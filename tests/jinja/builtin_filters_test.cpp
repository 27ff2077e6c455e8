// Jinja2's builtin filters and transformers' tojson; expected outputs are
// Jinja2 3.1's in Hugging Face's environment.
#include <gtest/gtest.h>

#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {

using testing::error_kind;
using testing::render;

TEST(Filters, Strings) {
  EXPECT_EQ(
      render("{{ '  x '|trim }}|{{ 'xxaxx'|trim('x') }}|{{ 'Hello'|upper }}|{{ 'Hello'|lower }}|"
             "{{ 'hELLO wORLD'|capitalize }}|{{ 'hello wORLD-foo'|title }}"),
      "x|a|HELLO|hello|Hello world|Hello World-Foo");
  EXPECT_EQ(render("{{ 'aXbX'|replace('X', '-') }}|{{ 'aXbX'|replace('X', '-', 1) }}"),
            "a-b-|a-bX");
  EXPECT_EQ(
      render("{{ 'hello world foo'|truncate(11) }}|{{ 'hello world foo'|truncate(9, leeway=0) }}|"
             "{{ 'abc'|center(7) }}|{{ 'a b  c'|wordcount }}"),
      "hello world foo|hello...|  abc  |3");
  EXPECT_EQ(render("{{ 'abc'|reverse }} {{ 5|string ~ 'x' }} {{ [1]|string }} "
                   "{{ '<p>a <b>b</b></p>'|striptags }} {{ '%s=%d'|format('a', 1) }}"),
            "cba 5x [1] a b a=1");
}

TEST(Filters, Indent) {
  EXPECT_EQ(render("{{ 'a\nb\n\nc'|indent }}|{{ 'a\nb'|indent(2, true) }}|"
                   "{{ 'a\n\nb'|indent(2, blank=true) }}|{{ 'a\nb'|indent('> ') }}"),
            "a\n    b\n\n    c|  a\n  b|a\n  \n  b|a\n> b");
}

TEST(Filters, Default) {
  EXPECT_EQ(render("{{ x|default('d') }}|{{ ''|default('d') }}|{{ ''|default('d', true) }}|"
                   "{{ none|default('d') }}|{{ x|d }}|"),
            "d||d|None||");
}

TEST(Filters, Sequences) {
  EXPECT_EQ(render("{{ [1, 2, 3]|join(', ') }}|{{ ['a', 'b']|join }}|"
                   "{{ [{'n': 'x'}, {'n': 'y'}]|join('/', attribute='n') }}"),
            "1, 2, 3|ab|x/y");
  EXPECT_EQ(
      render("{{ [3, 1, 2]|first }}{{ [3, 1, 2]|last }}{{ 'abc'|first }}{{ [3, 1, 2]|length }}"
             "{{ 'h\xC3\xA9llo'|length }}{{ {'a': 1}|length }}{{ [1]|count }}"),
      "32a3511");
  EXPECT_EQ(render("{{ [1, 2]|reverse|list }} {{ 'ab'|list }} {{ {'k': 1}|list }}"),
            "[2, 1] ['a', 'b'] ['k']");
  EXPECT_EQ(render("{{ [1, 2.5]|sum }}|{{ [{'v': 1}, {'v': 2}]|sum(attribute='v') }}|"
                   "{{ [1, 2, 3, 4, 5]|batch(2)|list }}|{{ [1, 2, 3, 4, 5]|slice(2)|list }}"),
            "3.5|3|[[1, 2], [3, 4], [5]]|[[1, 2, 3], [4, 5]]");
  EXPECT_EQ(error_kind("{{ 3|length }}"), ErrorKind::kRuntime);
}

TEST(Filters, Sorting) {
  EXPECT_EQ(render("{{ {'b': 1, 'a': 2}|items|list }}|{{ {'b': 1, 'A': 2, 'a': 3}|dictsort }}|"
                   "{{ {'x': 2, 'y': 1}|dictsort(by='value') }}"),
            "[('b', 1), ('a', 2)]|[('A', 2), ('a', 3), ('b', 1)]|[('y', 1), ('x', 2)]");
  EXPECT_EQ(render("{{ ['b', 'A', 'c']|sort }}|{{ [3, 1, 2]|sort(reverse=true) }}|"
                   "{{ [{'a': 2}, {'a': 1}]|sort(attribute='a') }}"),
            "['A', 'b', 'c']|[3, 2, 1]|[{'a': 1}, {'a': 2}]");
  EXPECT_EQ(render("{{ ['a', 'A', 'b']|unique|list }}|{{ [3, 1, 2]|min }}{{ [3, 1, 2]|max }}|"
                   "{{ [{'a': 2}, {'a': 5}]|max(attribute='a') }}"),
            "['a', 'b']|13|{'a': 5}");
  EXPECT_EQ(error_kind("{{ [1, 'a']|sort }}"), ErrorKind::kRuntime);
}

TEST(Filters, MapSelectReject) {
  EXPECT_EQ(render("{{ ['a', 'b']|map('upper')|list }}|{{ [{'n': 1}, {}]|map(attribute='n', "
                   "default=0)|list }}|"
                   "{{ [0, 1, 2]|select|list }}|{{ [1, 2, 3]|reject('odd')|list }}"),
            "['A', 'B']|[1, 0]|[1, 2]|[2]");
  EXPECT_EQ(render("{{ [{'r': 'u'}, {'r': 'a'}]|selectattr('r', 'equalto', 'u')|list }}|"
                   "{{ [{'t': 1}, {}]|rejectattr('t')|list }}|{{ [1, 2]|select('>', 1)|list }}"),
            "[{'r': 'u'}]|[{}]|[2]");
  // Generators: truthy, no length, one pass; a falsy input gives nothing.
  EXPECT_EQ(render("{{ 'y' if []|select else 'n' }}|{% set g = [1, 2]|map('string') %}{{ g|join }}|"
                   "{{ g|join }}|{{ none|selectattr('x')|list }}"),
            "y|12||[]");
  EXPECT_EQ(error_kind("{{ [1, 2]|select('odd')|length }}"), ErrorKind::kRuntime);
}

TEST(Filters, Numbers) {
  EXPECT_EQ(
      render("{{ '42'|int }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(9) }} {{ 'ff'|int(0, 16) }} "
             "{{ '2.5'|float }} {{ 'x'|float }} {{ 3|float }}"),
      "42 4 0 9 255 2.5 0.0 3.0");
  EXPECT_EQ(
      render("{{ -3|abs }} {{ 2.5|round }} {{ 3.14159|round(2) }} {{ 3.14159|round(1, 'floor') }} "
             "{{ 3.11|round(1, 'ceil') }} {{ 2.675|round(2) }}"),
      "3 2.0 3.14 3.1 3.2 2.67");
  EXPECT_EQ(error_kind("{{ missing|int }}"), ErrorKind::kRuntime);
}

TEST(Filters, Markup) {
  EXPECT_EQ(render("{{ '<b>'|safe }} {{ '<b>&'|escape }} {{ ('<a>'|safe) + '<b>' }} "
                   "{{ '<a>' + ('<b>'|safe) }} {{ ('<a>'|safe) ~ '<b>' }}"),
            "<b> &lt;b&gt;&amp; <a>&lt;b&gt; &lt;a&gt;<b> <a><b>");
}

TEST(Filters, ToJsonIsTransformersJsonDumps) {
  EXPECT_EQ(render("{{ {'a': [1, '\xC3\xA9'], 'b': none}|tojson }}|{{ "
                   "'\xC3\xA9'|tojson(ensure_ascii=true) }}|"
                   "{{ {'a': [1]}|tojson(indent=2) }}|"
                   "{{ {'b': 1, 'a': 2}|tojson(sort_keys=true, separators=(',', ':')) }}"),
            "{\"a\": [1, \"\xC3\xA9\"], \"b\": null}|\"\\u00e9\"|{\n  \"a\": [\n    1\n  "
            "]\n}|{\"a\":2,\"b\":1}");
  EXPECT_EQ(render(R"({{ 1.0|tojson }} {{ 1e20|tojson }} {{ (1, 2)|tojson }} {{ '<&>'|tojson }})"),
            R"(1.0 1e+20 [1, 2] "<&>")");
  EXPECT_EQ(render(R"({{ 'a"\\b	'|tojson }})"), R"("a\"\\b\t")");
  // Keys keep their insertion order, as Python dicts do.
  EXPECT_EQ(render("{{ t|tojson }}",
                   nlohmann::ordered_json::parse(R"({"t": {"z": 1, "a": {"y": 2, "b": 3}}})")),
            R"({"z": 1, "a": {"y": 2, "b": 3}})");
  EXPECT_EQ(error_kind("{{ x|tojson }}"), ErrorKind::kRuntime);
}

}  // namespace
}  // namespace strata::jinja
