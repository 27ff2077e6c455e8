// The lexer: tokens, whitespace control exactly as Jinja2 with trim_blocks
// and lstrip_blocks, newline normalization, literals, and errors with their
// positions. Expected outputs are Jinja2 3.1's.
#include "jinja/lexer.h"

#include <gtest/gtest.h>

#include "jinja/template_error.h"
#include "tests/jinja/test_util.h"

namespace strata::jinja {
namespace {

using testing::error_kind;
using testing::render;

std::vector<TokenType> types(const std::string& source) {
  std::vector<TokenType> out;
  for (const Token& t : tokenize(source, LexerOptions{})) out.push_back(t.type);
  return out;
}

TEST(Lexer, TokenKinds) {
  const auto tokens = tokenize("a{{ x.y(1, 'b') }}{% if z %}{# c #}", LexerOptions{});
  ASSERT_EQ(tokens.size(), 16u);
  EXPECT_EQ(tokens[0].type, TokenType::kData);
  EXPECT_EQ(tokens[0].text, "a");
  EXPECT_EQ(tokens[1].type, TokenType::kVariableBegin);
  EXPECT_EQ(tokens[2].type, TokenType::kName);
  EXPECT_EQ(tokens[3].text, ".");
  EXPECT_EQ(tokens[6].type, TokenType::kInteger);
  EXPECT_EQ(tokens[6].int_value, 1);
  EXPECT_EQ(tokens[8].type, TokenType::kString);
  EXPECT_EQ(tokens[8].text, "b");
  EXPECT_EQ(tokens[10].type, TokenType::kVariableEnd);
  EXPECT_EQ(tokens[11].type, TokenType::kBlockBegin);
  EXPECT_EQ(tokens[14].type, TokenType::kBlockEnd);
  EXPECT_EQ(tokens.back().type, TokenType::kEof);
}

TEST(Lexer, OperatorsLongestFirst) {
  const auto tokens = tokenize("{{ a // b ** c == d != e >= f <= g }}", LexerOptions{});
  std::vector<std::string> ops;
  for (const Token& t : tokens) {
    if (t.type == TokenType::kOperator) ops.push_back(t.text);
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"//", "**", "==", "!=", ">=", "<="}));
}

TEST(Lexer, BracesInsideExpressionsDoNotEndTags) {
  EXPECT_EQ(render("{{ {'a': {'b': 1}} }}"), "{'a': {'b': 1}}");
  EXPECT_EQ(render("{{ '}}' ~ '%}' }}"), "}}%}");
}

TEST(Lexer, TrimBlocksAndLstripBlocks) {
  EXPECT_EQ(render("a\n{% if true %}\nb\n{% endif %}\nc\n"), "a\nb\nc");
  EXPECT_EQ(render("a\n    {% if true %}\n    b\n    {% endif %}\nc"), "a\n    b\nc");
  // lstrip_blocks applies to blocks and comments, not to {{ }}.
  EXPECT_EQ(render("x\n    {{ 1 }}\n    {# c #}\n  y"), "x\n    1\n  y");
}

TEST(Lexer, WhitespaceControlSigns) {
  EXPECT_EQ(render("a   \n\n  {%- if true %}b{% endif %}"), "ab");
  EXPECT_EQ(render("{% if true -%}   \n\n  b{% endif %}"), "b");
  EXPECT_EQ(render("a  {{- 'x' -}}  \n b"), "axb");
  EXPECT_EQ(render("a\n    {%+ if true %}b{% endif %}"), "a\n    b");
  EXPECT_EQ(render("{% if true +%}\nb{% endif %}"), "\nb");
}

TEST(Lexer, RawBlocks) {
  EXPECT_EQ(render("{% raw %}{{ not }}{% endraw %}\n|"), "{{ not }}|");
  EXPECT_EQ(error_kind("{% raw %}never closed"), ErrorKind::kSyntax);
}

TEST(Lexer, NewlinesNormalizedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(render("a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc\r\n"), "a\nb\nc");
  EXPECT_EQ(render("text\n"), "text");
  EXPECT_EQ(render("text\n\n"), "text\n");
}

TEST(Lexer, StringEscapesFollowPythonUnicodeEscape) {
  EXPECT_EQ(
      render(
          R"({{ 'a\nb' }}|{{ '\x41\u00e9\U0001F600' }}|{{ '\101' }}|{{ 'keep\q' }}|{{ 'a' 'b' }})"),
      "a\nb|A\xC3\xA9\xF0\x9F\x98\x80|A|keep\\q|ab");
  EXPECT_EQ(error_kind(R"({{ '\x4' }})"), ErrorKind::kSyntax);
}

TEST(Lexer, NumberLiterals) {
  EXPECT_EQ(render("{{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 2E-2 }}"),
            "1000 31 15 5 1500.0 0.02");
  const auto tokens = tokenize("{{ x.1.2 }}", LexerOptions{});
  // `1.2` after a dot is two integers, not a float (Jinja's float_re).
  EXPECT_EQ(tokens[3].type, TokenType::kInteger);
  EXPECT_EQ(tokens[5].type, TokenType::kInteger);
  EXPECT_EQ(error_kind("{{ 007 }}"), ErrorKind::kSyntax);
}

TEST(Lexer, ErrorsCarryLineAndColumn) {
  try {
    tokenize("line one\n{{ 1 ? 2 }}", LexerOptions{});
    FAIL() << "no error";
  } catch (TemplateException& e) {
    EXPECT_EQ(e.error().kind(), ErrorKind::kSyntax);
    EXPECT_EQ(e.error().line(), 2);
    EXPECT_EQ(e.error().column(), 6);
    EXPECT_EQ(e.error().message(), "unexpected char '?' at 14");
  }
  EXPECT_EQ(error_kind("{# never closed"), ErrorKind::kSyntax);
  EXPECT_EQ(error_kind("{{ 'abc }}"), ErrorKind::kSyntax);
  EXPECT_EQ(error_kind("{{ (1 }}"), ErrorKind::kSyntax);
}

TEST(Lexer, OptionsCanTurnOffTrimming) {
  LexerOptions plain;
  plain.trim_blocks = false;
  plain.lstrip_blocks = false;
  const auto tokens = tokenize("  {% if x %}\nb", plain);
  EXPECT_EQ(tokens[0].text, "  ");
  EXPECT_EQ(tokens.back().type, TokenType::kEof);
  EXPECT_EQ(tokens[tokens.size() - 2].text, "\nb");
  EXPECT_EQ(types("{{ x }}"), (std::vector<TokenType>{TokenType::kVariableBegin, TokenType::kName,
                                                      TokenType::kVariableEnd, TokenType::kEof}));
}

}  // namespace
}  // namespace strata::jinja
