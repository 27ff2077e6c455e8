#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {
using testing::render;

TEST(py_string_placeholder, Builds) {
  EXPECT_EQ(render("x"), "x");
}

}  // namespace
}  // namespace strata::jinja
