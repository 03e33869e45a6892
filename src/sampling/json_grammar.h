// A byte-level recognizer of one JSON object (RFC 8259), for constrained
// decoding: it accepts exactly the byte strings that are a prefix of
// `ws* object`, and says when the object is complete.
//
//   JsonState s;                               // before the object
//   if (!JsonAdvance(&s, "{\"a\": [1, ")) ...   // false: not a valid prefix
//   JsonComplete(s);                           // true once the '}' is in
//
// Beyond RFC 8259, so that a constrained model cannot run forever or
// overflow the state: at most kJsonMaxDepth nested containers; whitespace
// between tokens is at most one newline, first, then at most
// kJsonMaxIndent spaces or tabs (llama.cpp's JSON grammar allows the same
// shape, which keeps small models from emitting blank lines forever; no
// '\r'); nothing, not even whitespace, after the top-level object. Strings must
// be valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF)
// without raw control characters; \u escapes take any 4 hex digits, as JSON
// parsers do.
//
// Every accepted prefix can still be completed, so a constraint built on
// this never reaches a state where no byte is allowed.
//
// JsonState is a small value type: copy it to explore alternatives. Two
// states that compare equal accept the same continuations.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace weft::sampling {

// Containers open at once, at most.
inline constexpr int kJsonMaxDepth = 64;
// Spaces or tabs in one run of whitespace, at most (pretty-printed output
// indents by a few per level).
inline constexpr int kJsonMaxIndent = 32;

struct JsonState {
  uint64_t stack = 0;  // bit d: the container at depth d is an array
  uint8_t depth = 0;   // containers open
  uint8_t mode = 0;    // what may come next (json_grammar.cc's Mode)
  uint8_t aux = 0;     // per mode: literal position, hex digits left, ...
  uint8_t lit = 0;     // which literal (true/false/null) in kLiteral
  uint8_t lo = 0x80;   // the next UTF-8 continuation byte's range
  uint8_t hi = 0xBF;
  uint8_t ws = 0;   // spaces/tabs in the current run; +0x80: after '\n'
  uint8_t key = 0;  // the string being read is an object key

  bool operator==(const JsonState& o) const {
    return std::memcmp(this, &o, sizeof(JsonState)) == 0;
  }
};
static_assert(sizeof(JsonState) == 16, "no padding: compared bytewise");

// Feeds one byte. false (and *s unspecified) if the bytes so far are no
// longer a prefix of one JSON object.
bool JsonAdvanceByte(JsonState* s, uint8_t byte);

// Feeds bytes in order; false as soon as one is rejected.
inline bool JsonAdvance(JsonState* s, std::string_view bytes) {
  for (char c : bytes) {
    if (!JsonAdvanceByte(s, static_cast<uint8_t>(c))) return false;
  }
  return true;
}

// Whether the top-level object is closed (only the end may follow).
bool JsonComplete(const JsonState& s);

// Whether s is inside a string between characters (not in an escape or a
// multi-byte character), where "plain" text (no quote, backslash or
// control character; whole UTF-8 characters) leaves the state unchanged.
bool JsonInPlainString(const JsonState& s);

}  // namespace weft::sampling
