// GBNF (llama.cpp's grammar dialect) compiled to the byte grammar of
// grammar.h.
//
//   StatusOr<std::shared_ptr<const Grammar>> g = CompileGbnf(
//       "root ::= \"yes\" | \"no\"  # a comment\n");
//
// Supported: rules `name ::= ...` (names of letters, digits, '-' and '_';
// `root` is the start), alternatives `|`, grouping `( )`, `*` `+` `?`,
// `{m}` `{m,}` `{m,n}` `{,n}`, string literals with escapes (\n \r \t
// \\ \" \' \[ \] \- \xHH \uHHHH \UHHHHHHHH), character classes with ranges
// and negation `[^...]` (over code points, matched as UTF-8), `.` (any
// character), and `#` comments. A rule may span lines; the next rule
// starts at the next `name ::=`. Everything else (token references `<...>`,
// `!`, undefined rules, left recursion) is an INVALID_ARGUMENT naming it.
//
// Thread safety: a function of its argument.
#pragma once

#include <memory>
#include <string_view>

#include "sampling/grammar.h"
#include "util/status.h"

namespace weft::sampling {

StatusOr<std::shared_ptr<const Grammar>> CompileGbnf(std::string_view text);

// A grammar accepting exactly one of `choices` (vLLM's `choice`). Empty
// list: INVALID_ARGUMENT.
StatusOr<std::shared_ptr<const Grammar>> CompileChoice(const std::vector<std::string>& choices);

}  // namespace weft::sampling
