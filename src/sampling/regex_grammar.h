// Regular expressions (the subset vLLM and outlines users write) compiled to
// the byte grammar of grammar.h.
//
//   StatusOr<std::shared_ptr<const Grammar>> g = CompileRegex("\\d{3}-\\d{4}");
//
// Supported: literals (UTF-8), escapes (\d \D \w \W \s \S, \n \t \r \f \v
// \0, \xHH, \uHHHH, an escaped punctuation character), classes with ranges
// and negation, `.` (any character but a newline), groups (capturing,
// named, and (?:...)), alternation, quantifiers * + ? {m} {m,} {m,n}
// (lazy forms too: they match the same strings), and ^ $ at the very
// ends. The whole output must match (as vLLM's regex does). \d, \w and \s
// are ASCII. Anything else (lookarounds, backreferences, \b, flags,
// possessive quantifiers, POSIX classes, anchors inside the pattern) is an
// INVALID_ARGUMENT naming it: never silently ignored.
//
// Thread safety: functions of their arguments.
#pragma once

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "sampling/grammar.h"
#include "util/status.h"

namespace weft::sampling {

// Repetition counts larger than this are refused.
inline constexpr int kMaxRegexRepeat = 1000;

StatusOr<std::shared_ptr<const Grammar>> CompileRegex(std::string_view pattern);

// Adds `pattern` to *b and returns the element that matches it. With
// json_string, it matches the pattern's strings as written inside a JSON
// string (", \ and control characters as their JSON escapes; \u escapes
// for others are not accepted). With unanchored, a pattern without ^ may
// begin, and one without $ may end, anywhere in the string (JSON Schema's
// `pattern` semantics).
StatusOr<GrammarElement> AddRegex(GrammarBuilder* b, std::string_view pattern,
                                  bool json_string, bool unanchored);

// Code points (inclusive ranges) as a choice of one character: UTF-8, or
// with json_string as written inside a JSON string (see above).
GrammarAlts CharsetAlts(GrammarBuilder* b, const std::vector<std::pair<uint32_t, uint32_t>>& cps,
                        bool json_string);

}  // namespace weft::sampling
