// Grammar pieces of JSON texts that schema_grammar.cc assembles: bounded
// whitespace, strings, numbers, integer ranges, keys outside a set, and
// any value. Internal to the JSON Schema compiler.
//
// Thread safety: one JsonParts per compile (it adds rules to one builder);
// the pieces are built on first use and shared after.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sampling/grammar.h"
#include "util/status.h"

namespace weft::sampling {

// Spaces or tabs in one whitespace run, at most (as json_grammar.h).
inline constexpr int kSchemaMaxIndent = 32;

class JsonParts {
 public:
  explicit JsonParts(GrammarBuilder* b) : b_(b) {}

  // An optional newline, then up to kSchemaMaxIndent spaces or tabs.
  GrammarElement Ws();
  // One character inside a JSON string: plain (valid UTF-8, no '"', '\\'
  // or control character) or an escape.
  GrammarElement StringChar();
  GrammarElement String();  // '"' StringChar* '"'
  GrammarElement Number();  // RFC 8259 number
  // Integers in [lo, hi] (unbounded where absent), no leading zeros, no -0.
  GrammarElement IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi);
  // A JSON string key (with its quotes) equal to none of `names`; keys
  // with escapes before they differ from every name are not accepted.
  GrammarElement KeyNotIn(const std::vector<std::string>& names);
  // Any JSON value (recursive; depth bounded by the recognizer's caps).
  GrammarElement AnyValue();

 private:
  // [lo, hi]: digit strings of the same length.
  GrammarAlts DigitRange(const std::string& lo, const std::string& hi);
  // Non-negative integers in [lo, hi]; hi < 0: unbounded.
  GrammarAlts NonNegative(int64_t lo, int64_t hi);

  GrammarBuilder* b_;
  std::optional<GrammarElement> ws_, char_, string_, number_, value_;
};

// The regex (regex_grammar.h) of a supported `format` (date, time,
// date-time, uuid, email); INVALID_ARGUMENT naming any other.
StatusOr<std::string> FormatRegex(const std::string& format);

}  // namespace weft::sampling
