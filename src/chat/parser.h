// Jinja2 parser: tokens (lexer.h) to a syntax tree (ast.h), following
// jinja2/parser.py's grammar and operator precedence (condexpr < or < and <
// not < compare < +,- < ~ < *,/,//,% < ** (left-assoc) < unary < postfix,
// filters, tests). Supports if/elif/else, for (tuple targets, loop filter,
// else), set (expression, tuple and block forms, namespace attributes),
// macro, call, filter, with, break/continue, raw, and Hugging Face's
// generation tag. Unsupported tags (extends, include, import, block) fail
// with a clear error.
//
// Thread safety: pure function.
#pragma once

#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "util/status.h"

namespace weft::chat {

// The template body. InvalidArgument "template syntax error at line N: ..."
// on malformed input; never crashes. Nesting depth is bounded by
// `max_nesting`.
StatusOr<std::vector<NodePtr>> ParseTemplate(std::string_view source,
                                             int max_nesting = 256);

}  // namespace weft::chat
