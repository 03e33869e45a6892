// The text shapes of each ToolCallFormat (tool_calls.h): the markers that
// open a call block and a parser for one block. Internal to tool_calls.cc.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace weft::server::tool_internal {

// One parsed block: calls (name and arguments; ids come later) and, for
// the generic format's {"response": ...}, content.
struct BlockResult {
  enum class Status {
    kIncomplete,  // more text may complete it
    kDone,        // consumed bytes form the block
    kNotHere,     // no block starts here (unmarked forms only)
    kInvalid,     // a marked block that does not parse
  };
  Status status = Status::kNotHere;
  size_t consumed = 0;
  std::vector<ParsedToolCall> calls;  // ids empty
  std::string content;
};

// Strings that open a block anywhere in the output.
const std::vector<std::string>& Markers(ToolCallFormat f);
// Whether a block without a marker may start at a call position (the
// start of the output when `first`, else right after another block).
bool HasUnmarkedStart(ToolCallFormat f, bool first);
// Parses the block at the start of `s`: a marked one (s starts with one of
// Markers(f)) or, when `unmarked`, one without a marker. At `at_end`, the
// answer is never kIncomplete.
BlockResult ParseBlock(ToolCallFormat f, std::string_view s, bool at_end, bool unmarked);

// The generic format's {"response": "...} up to the string's first
// character: its length, 0 while `s` may still become it, npos if not.
size_t GenericResponsePrefix(std::string_view s);

// Decodes the JSON string characters at the start of `s` (after the
// opening quote) into *out, up to the closing quote or the end of `s` (an
// unfinished escape is left). Returns the bytes consumed; *closed: the
// closing quote was consumed.
size_t DecodeJsonString(std::string_view s, std::string* out, bool* closed);

// Whitespace as JSON has it.
inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

}  // namespace weft::server::tool_internal
