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

// Deepest nesting of arrays/objects in `body`, counted on the raw bytes
// (outside strings). Later steps (dumping `tools`, kwargs) recurse, so depth
// is bounded before parsing.
int MaxJsonDepth(std::string_view body);

// The body as a JSON object, or nullopt with a 400 in *err (too deep, not
// JSON, not an object).
std::optional<nlohmann::json> ParseBody(std::string_view body,
                                        std::optional<ApiError>* err);

}  // namespace weft::server
