// The interpreter: statements, scoping, macros, loops, Undefined and the
// sandbox. Expected outputs are what Python Jinja2 3.1 renders in Hugging
// Face's environment (checked with tests/jinja/jinja_reference.py's setup).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {

using json = nlohmann::ordered_json;
using testing::error_kind;
using testing::render;

TEST(Interpreter, OutputsTextAndExpressions) {
  EXPECT_EQ(render("a{{ 1 + 2 }}b{{ 'c' }}"), "a3bc");
  EXPECT_EQ(render("{{ x }}", {{"x", "value"}}), "value");
  EXPECT_EQ(render("{{ none }}|{{ true }}|{{ 1.0 }}|{{ [1, 'a'] }}"), "None|True|1.0|[1, 'a']");
}

TEST(Interpreter, IfElifElse) {
  const std::string t = "{% if n > 2 %}big{% elif n > 0 %}small{% else %}none{% endif %}";
  EXPECT_EQ(render(t, {{"n", 5}}), "big");
  EXPECT_EQ(render(t, {{"n", 1}}), "small");
  EXPECT_EQ(render(t, {{"n", 0}}), "none");
}

TEST(Interpreter, ForLoopVariables) {
  EXPECT_EQ(render("{% for m in msgs %}{% if loop.first %}[{% endif %}{{ m }}{% if not loop.last "
                   "%},{% endif %}{% if loop.last %}]{% endif %}{% endfor %}",
                   {{"msgs", {"a", "b", "c"}}}),
            "[a,b,c]");
  EXPECT_EQ(render("{% for x in 'ab' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}"
                   "{{ loop.revindex0 }}{{ loop.length }}{% endfor %}"),
            "10212"
            "21102");
  EXPECT_EQ(
      render("{% for x in 'ab' %}{{ loop.cycle('o', 'e') }}{{ loop.changed(1) }}{% endfor %}"),
      "oTrueeFalse");
  EXPECT_EQ(
      render(
          "{% for x in [1, 2, 3] %}{{ loop.previtem is defined }}{{ loop.nextitem|default('-') }}"
          "{% endfor %}"),
      "False2True3True-");
}

TEST(Interpreter, ForLoopFilterElseAndUnpacking) {
  EXPECT_EQ(
      render("{% for x in [3, 1, 2] if x > 1 %}{{ loop.index }}:{{ x }}{% else %}none{% endfor %}"),
      "1:32:2");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                   {{"d", {{"b", 1}, {"a", 2}}}}),
            "b=1;a=2;");
  EXPECT_EQ(error_kind("{% for a, b in [[1, 2, 3]] %}{% endfor %}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{% for x in none %}{% endfor %}"), ErrorKind::kRuntime);
  EXPECT_EQ(render("{% for x in missing %}x{% else %}no{% endfor %}"), "no");
}

TEST(Interpreter, BreakAndContinue) {
  EXPECT_EQ(render("{% for i in range(10) %}{% if i == 1 %}{% continue %}{% endif %}"
                   "{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
            "023");
  EXPECT_EQ(error_kind("{% break %}"), ErrorKind::kSyntax);
  EXPECT_EQ(error_kind("{% for x in [1] %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}"),
            ErrorKind::kSyntax);
}

TEST(Interpreter, RecursiveLoop) {
  json tree = json::parse(R"([{"n": 1, "c": [{"n": 2, "c": []}]}, {"n": 3}])");
  EXPECT_EQ(render("{% for x in t recursive %}{{ x.n }}{% if x.c %}[{{ loop(x.c) }}]{% endif %}"
                   "{{ loop.depth }}{% endfor %}",
                   {{"t", tree}}),
            "1[22]131");
  EXPECT_EQ(error_kind("{% for x in [1] %}{{ loop([]) }}{% endfor %}"), ErrorKind::kRuntime);
}

TEST(Interpreter, LoopScoping) {
  // A set inside an iteration stays in that iteration.
  EXPECT_EQ(render("{% for i in range(3) %}{% if i == 0 %}{% set x = 'a' %}{% endif %}[{{ x }}]"
                   "{% endfor %}[{{ x }}]"),
            "[a][][][]");
  // Each iteration starts from the outer value.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = x + 1 %}{{ x }}"
                   "{% endfor %}{{ x }}"),
            "12121");
  EXPECT_EQ(render("{% for i in [1] %}{% endfor %}[{{ i }}][{{ loop is defined }}]"), "[][False]");
  // if does not open a scope.
  EXPECT_EQ(render("{% if true %}{% set x = 'in' %}{% endif %}{{ x }}"), "in");
}

TEST(Interpreter, Namespace) {
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(4) %}{% set ns.n = ns.n + i %}"
                   "{% endfor %}{{ ns.n }}"),
            "6");
  EXPECT_EQ(render("{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}"
                   "{{ ns.c is defined }}"),
            "121False");
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{{ ns }}"), "<Namespace {'a': 1}>");
  EXPECT_EQ(error_kind("{% set x = 1 %}{% set x.y = 2 %}"), ErrorKind::kRuntime);
}

TEST(Interpreter, SetForms) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{% set t = 3, 4 %}{{ a }}{{ b }}{{ t }}"), "12(3, 4)");
  EXPECT_EQ(render("{% set x %}A{{ 1 + 1 }}B{% endset %}{{ x }}|{{ x|length }}"), "A2B|3");
  EXPECT_EQ(render("{% set x | upper %}abc{% endset %}{{ x }}"), "ABC");
  EXPECT_EQ(render("{% set x = 1 %}{% with %}{% set x = 2 %}{{ x }}{% endwith %}{{ x }}"), "21");
  EXPECT_EQ(render("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]"), "3[]");
  EXPECT_EQ(error_kind("{% set none = 1 %}"), ErrorKind::kSyntax);
}

TEST(Interpreter, FilterBlock) {
  EXPECT_EQ(render("{% filter upper %}abc{{ 'd' }}{% endfilter %}"), "ABCD");
  EXPECT_EQ(render("{% filter trim|replace('a', 'b') %}  aa  {% endfilter %}"), "bb");
}

TEST(Interpreter, Macros) {
  EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a }}-{{ b }}-{{ varargs|length }}-{{ kwargs|length }}"
                   "{% endmacro %}{{ m(1) }}|{{ m(1, 3, 4, k=5) }}"),
            "1-2-0-0|1-3-1-1");
  EXPECT_EQ(render("{% macro m(a, b) %}[{{ a }}][{{ b is defined }}]{% endmacro %}{{ m(1) }}"),
            "[1][False]");
  EXPECT_EQ(render("{% macro g(name, greeting='Hi') %}{{ greeting }} {{ name }}{% endmacro %}"
                   "{{ g(greeting='Yo', name='Ann') }}"),
            "Yo Ann");
  EXPECT_EQ(error_kind("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{% macro m(a) %}{% endmacro %}{{ m(1, b=2) }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{% macro m(a=1, b) %}{% endmacro %}"), ErrorKind::kSyntax);
  // Result is a plain string.
  EXPECT_EQ(render("{% macro m() %}5{% endmacro %}{{ m() ~ 1 }} {{ m()|int + 1 }}"), "51 6");
}

TEST(Interpreter, MacroScoping) {
  // Late binding: the macro sees its defining frame as it is at call time.
  EXPECT_EQ(render("{% macro m() %}{{ y }}{% endmacro %}{% set y = 1 %}{{ m() }}{% set y = 2 %}"
                   "{{ m() }}"),
            "12");
  // Lexical: not the caller's loop variable.
  EXPECT_EQ(render("{% set y = 3 %}{% macro m() %}{{ y }}{% endmacro %}{% for y in [9] %}{{ m() }}"
                   "{% endfor %}"),
            "3");
  EXPECT_EQ(
      render("{% set x = 1 %}{% macro m() %}{% set x = 2 %}{{ x }}{% endmacro %}{{ m() }}{{ x }}"),
      "21");
  EXPECT_EQ(render("{% macro m() %}{{ y }}{% endmacro %}{{ m() }}", {{"y", 7}}), "7");
  EXPECT_EQ(render("{% macro f(k) %}{% if k <= 1 %}1{% else %}{{ k * f(k - 1)|int }}{% endif %}"
                   "{% endmacro %}{{ f(5) }}"),
            "120");
}

TEST(Interpreter, CallBlocks) {
  EXPECT_EQ(
      render("{% macro list(items) %}<ul>{% for i in items %}<li>{{ caller(i) }}</li>"
             "{% endfor %}</ul>{% endmacro %}{% call(x) list([1, 2]) %}#{{ x }}{% endcall %}"),
      "<ul><li>#1</li><li>#2</li></ul>");
  EXPECT_EQ(render("{% macro w() %}[{{ caller() }}]{% endmacro %}{% for x in 'ab' %}{% call w() %}"
                   "{{ loop.index }}{{ x }}{% endcall %}{% endfor %}"),
            "[1a][2b]");
  EXPECT_EQ(error_kind("{% macro m() %}{{ caller() }}{% endmacro %}{{ m() }}"),
            ErrorKind::kRuntime);
}

TEST(Interpreter, GenerationBlockRendersItsBody) {
  EXPECT_EQ(render("a{% generation %}b{{ 1 }}{% set inner = 1 %}{% endgeneration %}c"
                   "{{ inner is defined }}"),
            "ab1cFalse");
}

TEST(Interpreter, RaiseExceptionIsItsOwnKind) {
  auto t = Template::parse("x{{ raise_exception('Roles must alternate') }}y");
  ASSERT_TRUE(t.is_ok());
  auto r = t->render({});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kRaised);
  EXPECT_EQ(r.error().message(), "Roles must alternate");
  EXPECT_EQ(r.error().to_string(), "Roles must alternate");
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(render("{{ raise_exception(42) }}"), "ERROR(template raised): 42");
  EXPECT_EQ(error_kind("{{ raise_exception() }}"), ErrorKind::kRuntime);
}

TEST(Interpreter, StrftimeNowUsesTheInjectedClock) {
  RenderOptions options;
  options.now = [] {
    std::tm tm{};
    tm.tm_year = 2024 - 1900;
    tm.tm_mon = 6;
    tm.tm_mday = 26;
    tm.tm_wday = 5;
    return tm;
  };
  EXPECT_EQ(
      render("{{ strftime_now('%d %b %Y') }} {{ strftime_now('%A') }}", json::object(), options),
      "26 Jul 2024 Friday");
}

TEST(Interpreter, UndefinedBehavesLikeJinjaDefault) {
  EXPECT_EQ(render("{{ missing }}|{{ missing is defined }}|{{ missing|default('dflt') }}|"
                   "{% for x in missing %}x{% endfor %}|{{ missing|length }}|{{ not missing }}"),
            "|False|dflt||0|True");
  EXPECT_EQ(render("{{ x.y }}|{{ x.y is defined }}", {{"x", json::object()}}), "|False");
  EXPECT_EQ(render("{{ none.x }}|{{ 'abc'.nope is defined }}|{{ [1][5] is defined }}"),
            "|False|False");
  EXPECT_EQ(render("{{ missing.attr }}"), "ERROR(template error): 'missing' is undefined");
  EXPECT_EQ(render("{{ d.missing.attr }}", {{"d", json::object()}}),
            "ERROR(template error): 'dict object' has no attribute 'missing'");
  EXPECT_EQ(render("{{ l[9].x }}", {{"l", {1}}}),
            "ERROR(template error): list object has no element 9");
  EXPECT_EQ(render("{{ missing + 1 }}"), "ERROR(template error): 'missing' is undefined");
  EXPECT_EQ(render("{{ missing() }}"), "ERROR(template error): 'missing' is undefined");
  EXPECT_EQ(render("{{ ('x' if false) is defined }}|{{ 'x' if false }}|"), "False||");
}

TEST(Interpreter, SandboxAttributes) {
  // Dict methods win over keys for attribute access; subscripts prefer keys.
  EXPECT_EQ(render("{{ d['items'] }}|{{ d.items()|list }}", {{"d", {{"items", 5}}}}),
            "5|[('items', 5)]");
  // Mutating methods are refused (printing them gives an empty Undefined).
  EXPECT_EQ(render("{{ [1, 2].append }}|done"), "|done");
  EXPECT_EQ(render("{{ [1, 2].append(3) }}"),
            "ERROR(template error): access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(render("{{ {'a': 1}.update({}) }}"),
            "ERROR(template error): access to attribute 'update' of 'dict' object is unsafe.");
  EXPECT_EQ(render("{{ ''.__class__ }}|"), "|");
  // list.pop and clear are allowed and change the list, as in Jinja.
  EXPECT_EQ(render("{% set l = [1, 2, 3] %}{{ l.pop() }}{{ l }}{{ l.pop(0) }}{{ l }}"),
            "3[1, 2]1[2]");
}

TEST(Interpreter, ListLiteralsAreFreshPerEvaluation) {
  EXPECT_EQ(render("{% for i in range(2) %}{% set l = [1] %}{{ l.pop() }}{% endfor %}"), "11");
}

TEST(Interpreter, UnknownFilterInsideIfFailsOnlyWhenReached) {
  EXPECT_EQ(render("{% if false %}{{ x|no_such }}{% endif %}ok"), "ok");
  EXPECT_EQ(render("{% if true %}{{ 'x'|no_such }}{% endif %}"),
            "ERROR(template error): No filter named 'no_such' found.");
  EXPECT_EQ(error_kind("{{ 'x'|no_such }}"), ErrorKind::kSyntax);
  EXPECT_EQ(error_kind("{% if false %}{% for x in [1] %}{{ x|no_such }}{% endfor %}{% endif %}"),
            ErrorKind::kSyntax);
}

TEST(Interpreter, ErrorsCarryTheLine) {
  auto t = Template::parse("line1\n{{ 'a' }}\n{{ missing.x }}\n");
  ASSERT_TRUE(t.is_ok());
  auto r = t->render({});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.error().kind(), ErrorKind::kRuntime);
  EXPECT_EQ(r.error().line(), 3);
  EXPECT_EQ(r.error().to_string(), "template error at line 3, column 4: 'missing' is undefined");
}

TEST(Interpreter, UnsupportedLoaderStatementsFailAtRender) {
  EXPECT_EQ(render("{% include 'x.html' %}"),
            "ERROR(template error): no loader for this environment specified");
  EXPECT_EQ(render("{% block b %}in block{% endblock %}"), "in block");
}

TEST(Interpreter, RendersConcurrently) {
  auto t = Template::parse("{% for m in msgs %}{{ m|upper }}{% endfor %}{{ n }}");
  ASSERT_TRUE(t.is_ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 200; ++i) {
        std::vector<std::pair<std::string, Value>> vars = {
            {"msgs", Value::list({Value::string("a"), Value::string("b")})},
            {"n", Value::integer(k * 1000 + i)}};
        auto r = t->render(vars);
        if (!r.is_ok() || r.value() != "AB" + std::to_string(k * 1000 + i)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace strata::jinja
