// Internal to src/server: helpers shared by the translations of other
// APIs' requests (Anthropic Messages, OpenAI Responses) into chat
// completions requests, and of chat output into their responses.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/api_error.h"

namespace weft::server {

// JSON text; invalid UTF-8 in strings is replaced, never thrown on.
inline std::string DumpJson(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The text of a content field: a string, or an array of blocks whose
// `text_types` blocks ("text", "input_text", ...) are joined. A 400 naming
// `param` for other block types (images, documents, ...).
inline ApiResult<std::string> BlocksText(
    const nlohmann::json& content, const char* param,
    std::initializer_list<const char*> text_types) {
  if (content.is_string()) return content.get<std::string>();
  if (content.is_null()) return std::string();
  if (!content.is_array())
    return BadRequest(
        std::string("'") + param + "' must be a string or an array of blocks",
        param);
  std::string out;
  for (const nlohmann::json& b : content) {
    const std::string type =
        b.is_object() && b.contains("type") && b["type"].is_string()
            ? b["type"].get<std::string>()
            : "";
    bool text = false;
    for (const char* t : text_types) text = text || type == t;
    if (!text || !b.contains("text") || !b["text"].is_string()) {
      return BadRequest("content blocks of type '" + type +
                            "' are not supported here (text only)",
                        param);
    }
    out += b["text"].get<std::string>();
  }
  return out;
}

// j[key] when it is present and not null, else nullptr.
inline const nlohmann::json* Field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace weft::server
