// Methods of str, list and dict as the sandbox exposes them (outputs are
// Jinja2 3.1's).
#include <gtest/gtest.h>

#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {

using testing::error_kind;
using testing::render;

TEST(BuiltinMethods, Strings) {
  EXPECT_EQ(render("{{ '  a b '.strip() }}|{{ 'a,b,,c'.split(',') }}|{{ 'a b c'.split(' ', 1) }}|"
                   "{{ 'a,b,c'.rsplit(',', 1) }}|{{ 'Hello'.startswith('He') }}|"
                   "{{ 'Hello'.endswith(('x', 'lo')) }}"),
            "a b|['a', 'b', '', 'c']|['a', 'b c']|['a,b', 'c']|True|True");
  EXPECT_EQ(render("{{ 'Hello'.find('l') }} {{ 'Hello'.rfind('l') }} {{ 'Hello'.count('l') }} "
                   "{{ 'Hello'.replace('l', 'L', 1) }} {{ 'hello world'.title() }} "
                   "{{ 'a=b=c'.partition('=') }} {{ '42'.zfill(5) }} {{ 'ab'.center(6, '*') }}"),
            "2 3 2 HeLlo Hello World ('a', '=', 'b=c') 00042 **ab**");
  EXPECT_EQ(
      render(
          "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ '   '.isspace() }} "
          "{{ 'Abc'.istitle() }} {{ ', '.join(['a', 'b']) }} {{ 'x.txt'.removesuffix('.txt') }}"),
      "True True True True a, b x");
  EXPECT_EQ(error_kind("{{ 'abc'.split('') }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ 'abc'.index('z') }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ ', '.join([1]) }}"), ErrorKind::kRuntime);
}

TEST(BuiltinMethods, ListsAndDicts) {
  EXPECT_EQ(
      render(
          "{{ [3, 1, 3].index(1) }} {{ [3, 1, 3].count(3) }} {{ {'a': 1}.get('a') }} "
          "{{ {'a': 1}.get('b', 'd') }} {{ {'a': 1}.keys()|list }} {{ {'a': 1}.values()|list }}"),
      "1 2 1 d ['a'] [1]");
  EXPECT_EQ(error_kind("{{ [].pop() }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ [1].sort() }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ {'a': 1}.setdefault('b', 2) }}"), ErrorKind::kRuntime);
}

TEST(BuiltinMethods, Numbers) {
  EXPECT_EQ(
      render("{{ (7).real }} {{ (2.5).imag }} {{ (4.0).is_integer() }} {{ (7).bit_length() }}"),
      "7 0.0 True 3");
}

}  // namespace
}  // namespace strata::jinja
