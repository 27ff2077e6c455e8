// Python str semantics over UTF-8 (code point indexing, whitespace, case,
// split, repr), as CPython 3.11 answers.
#include "jinja/py_string.h"

#include <gtest/gtest.h>

namespace strata::jinja::py {
namespace {

TEST(PyString, LengthAndSliceCountCodePoints) {
  EXPECT_EQ(length("h\xC3\xA9llo \xF0\x9F\x98\x80"), 7u);
  EXPECT_EQ(slice("h\xC3\xA9llo", false, 0, false, 0, -1), "oll\xC3\xA9h");
  EXPECT_EQ(slice("abcdef", true, 1, true, -1, 2), "bd");
  EXPECT_EQ(slice("abcdef", true, 10, false, 0, -2), "fdb");
  EXPECT_EQ(slice("abc", true, -10, true, 10, 1), "abc");
  // An invalid byte counts as one character and survives.
  EXPECT_EQ(length("a\xFF"
                   "b"),
            3u);
  EXPECT_EQ(slice("a\xFF"
                  "b",
                  false, 0, false, 0, -1),
            "b\xFF"
            "a");
}

TEST(PyString, WhitespaceIsPythons) {
  EXPECT_TRUE(is_space(' '));
  EXPECT_TRUE(is_space(0x1F));
  EXPECT_TRUE(is_space(0xA0));
  EXPECT_TRUE(is_space(0x3000));
  EXPECT_FALSE(is_space(0x200B));  // zero width space is not whitespace
  EXPECT_EQ(strip("\t\xE3\x80\x80 x \xC2\xA0\n", nullptr, true, true), "x");
  const std::string chars = "x<";
  EXPECT_EQ(strip("<<xaxx", &chars, true, false), "axx");
  EXPECT_EQ(strip("xa\xC3\xA9", nullptr, false, true), "xa\xC3\xA9");
}

TEST(PyString, Split) {
  EXPECT_EQ(split("  a  b c ", nullptr, -1), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split("  a  b c ", nullptr, 1), (std::vector<std::string>{"a", "b c "}));
  EXPECT_EQ(split("  a ", nullptr, 0), (std::vector<std::string>{"a "}));
  const std::string comma = ",";
  EXPECT_EQ(split("a,,b", &comma, -1), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(rsplit("a,b,c", &comma, 1), (std::vector<std::string>{"a,b", "c"}));
  EXPECT_EQ(rsplit(" a b c ", nullptr, 1), (std::vector<std::string>{" a b", "c"}));
  EXPECT_EQ(rsplit("  a  ", nullptr, 0), (std::vector<std::string>{"  a"}));
  EXPECT_EQ(splitlines("a\r\nb\rc\n\nd", false),
            (std::vector<std::string>{"a", "b", "c", "", "d"}));
  EXPECT_EQ(splitlines("a\nb\n", true), (std::vector<std::string>{"a\n", "b\n"}));
}

TEST(PyString, CaseMapping) {
  EXPECT_EQ(upper("stra\xC3\x9F"
                  "e"),
            "STRASSE");
  EXPECT_EQ(lower("\xCE\x91\xCE\xA3"), "\xCE\xB1\xCF\x82");  // final sigma
  EXPECT_EQ(lower("\xC4\xB0"), "i\xCC\x87");
  EXPECT_EQ(title("hello wORLD-foo"), "Hello World-Foo");
  EXPECT_EQ(capitalize("hELLO"), "Hello");
  EXPECT_TRUE(is_lower_string("abc1"));
  EXPECT_FALSE(is_lower_string("123"));
  EXPECT_TRUE(is_upper_string("\xC3\x89T\xC3\x89"));
}

TEST(PyString, ReplaceFindCount) {
  EXPECT_EQ(replace("aaa", "a", "b", 2), "bba");
  EXPECT_EQ(replace("ab", "", "-", -1), "-a-b-");
  EXPECT_EQ(find("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E", "\xE8\xAA\x9E", 0, 3, false), 2);
  EXPECT_EQ(find("abcabc", "c", 0, 6, true), 5);
  EXPECT_EQ(count("abab", "ab"), 2);
  EXPECT_EQ(count("ab", ""), 3);
  EXPECT_EQ(pad("ab", 5, '*', 0), "**ab*");
  EXPECT_EQ(pad("abc", 6, '*', 0), "*abc**");
  EXPECT_EQ(pad("ab", 6, '*', 0), "**ab**");
  EXPECT_EQ(zfill("-42", 5), "-0042");
}

TEST(PyString, ReprChoosesQuotesAndEscapes) {
  auto repr = [](std::string_view s) {
    std::string out;
    append_repr(s, &out);
    return out;
  };
  EXPECT_EQ(repr("it's"), "\"it's\"");
  EXPECT_EQ(repr("say \"hi\""), "'say \"hi\"'");
  EXPECT_EQ(repr("both ' \""), "'both \\' \"'");
  EXPECT_EQ(repr("a\tb\nc\\"), "'a\\tb\\nc\\\\'");
  EXPECT_EQ(repr(std::string("\x00\x7f", 2)), "'\\x00\\x7f'");
  EXPECT_EQ(repr("\xC2\xA0\xE2\x80\x8B\xC3\xA9\xF0\x9F\x98\x80"),
            "'\\xa0\\u200b\xC3\xA9\xF0\x9F\x98\x80'");
  EXPECT_EQ(escape_html("<a href=\"x\">'&'</a>"),
            "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;");
}

}  // namespace
}  // namespace strata::jinja::py
