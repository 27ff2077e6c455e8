// Lexer: Jinja template source to tokens, following Jinja2 3.1's lexer rule
// for rule: `{{ }}`, `{% %}`, `{# #}`, `{% raw %}`; whitespace control with
// `-` and `+`; trim_blocks (drop the newline after a block or comment tag)
// and lstrip_blocks (drop the spaces before one on its line); newlines
// normalized to "\n" and one trailing newline dropped (keep_trailing_newline
// off); string literals unescaped as Python's unicode-escape codec does;
// integer and float literals with `_` separators and 0b/0o/0x prefixes.
// Errors throw TemplateException (kSyntax) with the line and column.
// Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::jinja {

struct LexerOptions {
  bool trim_blocks = true;    // Hugging Face's setting (Jinja's default: false)
  bool lstrip_blocks = true;  // Hugging Face's setting (Jinja's default: false)
};

enum class TokenType : uint8_t {
  kData,           // template text (already whitespace-controlled)
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,  // text holds the operator: + - // ** == ( ...
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string text;  // data, name, unescaped string, operator
  int64_t int_value = 0;
  double float_value = 0.0;
  bool int_overflow = false;  // an integer literal beyond int64
  int line = 1;
  int column = 1;
};

// Tokenizes `source`; the last token is always kEof.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options);

// How Jinja names a token in error messages ("end of print statement", ...).
std::string describe_token(const Token& token);

}  // namespace strata::jinja
