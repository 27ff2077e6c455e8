// Python's `%` formatting and str.format (outputs are CPython 3.11's).
#include "jinja/py_format.h"

#include <gtest/gtest.h>

#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {

using testing::error_kind;
using testing::render;

TEST(PyFormat, Percent) {
  EXPECT_EQ(render("{{ '%s and %s' % ('a', 'b') }} {{ '%d%%' % 50 }} {{ '%5.1f' % 3.14159 }} "
                   "{{ '%-4s|' % 'x' }} {{ '%x %X %o' % (255, 255, 8) }} {{ '%(a)s' % {'a': 1} }} "
                   "{{ '%r' % 'q' }} {{ '%+05d' % 42 }}"),
            "a and b 50%   3.1 x   | ff FF 10 1 'q' +0042");
  EXPECT_EQ(
      render("{{ '%s' % none }} {{ '%s' % [1, 2] }} {{ '%.3s' % 'abcdef' }} {{ 'no args' % {} }}"),
      "None [1, 2] abc no args");
  EXPECT_EQ(error_kind("{{ '%s %s' % ('a',) }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ 'x' % 1 }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ '%d' % 'a' }}"), ErrorKind::kRuntime);
}

TEST(PyFormat, StrFormat) {
  EXPECT_EQ(
      render("{{ '{} and {}'.format('a', 'b') }} {{ '{1}{0}'.format('a', 'b') }} "
             "{{ '{x}-{y}'.format(x=1, y=2) }} {{ '{:>5}|{:<4}|{:^6}'.format('a', 'b', 'c') }} "
             "{{ '{:05.2f}'.format(3.14159) }} {{ '{:,}'.format(1234567) }} "
             "{{ '{!r}'.format('q') }} {{ '{0[a]}'.format({'a': 'A'}) }}"),
      "a and b ba 1-2     a|b   |  c    03.14 1,234,567 'q' A");
  EXPECT_EQ(render("{{ '{{}}'.format() }} {{ '{:x}'.format(255) }} {{ '{:.1%}'.format(0.25) }}"),
            "{} ff 25.0%");
  EXPECT_EQ(error_kind("{{ '{}{}'.format('a') }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ '{'.format() }}"), ErrorKind::kRuntime);
  EXPECT_EQ(error_kind("{{ '{:99999999999}'.format(1) }}"), ErrorKind::kLimit);
}

}  // namespace
}  // namespace strata::jinja
