// Internal to src/server: the chat `messages` list of an OpenAI request
// (openai_request.cc reads every other field).
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/backend.h"

namespace weft::server {

// Appends `msgs` (a JSON list of chat messages) to out->messages; false
// with *why set (naming the entry) if a message is malformed or unsupported.
bool ParseMessages(const nlohmann::json& msgs, ChatTemplateRequest* out,
                   std::string* why);

}  // namespace weft::server
