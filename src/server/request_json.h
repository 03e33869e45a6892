// Internal to src/server: the first step of every request-body parser.
// Bounds JSON nesting on the raw bytes, then parses into an object.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace weft::server {

// Real requests nest a few levels (tools: schema objects); 64 leaves room.
inline constexpr int kMaxJsonDepth = 64;

// JSON's brackets outside strings, one byte at a time (escapes inside
// strings honoured; nothing else validated).
struct JsonBracketScanner {
  int depth = 0;  // brackets open after the bytes fed so far
  bool in_string = false, escaped = false;
  // +1 when c opens a bracket, -1 when it closes one, else 0.
  int Feed(char c) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      return 0;
    }
    if (c == '"') in_string = true;
    if (c == '[' || c == '{') {
      ++depth;
      return 1;
    }
    if (c == ']' || c == '}') {
      --depth;
      return -1;
    }
    return 0;
  }
};

// Deepest nesting of arrays/objects in `body`, counted on the raw bytes
// (outside strings). Later steps (dumping `tools`, kwargs) recurse, so depth
// is bounded before parsing.
int MaxJsonDepth(std::string_view body);

// The body as a JSON object, or nullopt with a 400 in *err (too deep, not
// JSON, not an object).
std::optional<nlohmann::json> ParseBody(std::string_view body,
                                        std::optional<ApiError>* err);

}  // namespace weft::server
