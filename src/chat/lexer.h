// Jinja2 lexer with Hugging Face's settings (trim_blocks=True,
// lstrip_blocks=True, keep_trailing_newline=False). Mirrors jinja2/lexer.py:
// newline normalization, whitespace control (`{%-`, `-%}`, `{%+`, `+%}`,
// `{{-`, `-}}`, `{#- -#}`), raw blocks, bracket balancing inside tags,
// Python string-literal escapes and integer/float literal forms.
//
// Thread safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace weft::chat {

enum class TokenType {
  kData,        // template text, already whitespace-controlled
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text = the unescaped value
  kInteger,
  kFloat,
  kOperator,  // text = "+", "//", "(", ...
  kEof,
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string text;
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0;
};

// Tokens of `source`, ending with kEof. InvalidArgument naming the line on
// an unterminated tag/comment/string or an unexpected character.
StatusOr<std::vector<Token>> Tokenize(std::string_view source);

}  // namespace weft::chat
