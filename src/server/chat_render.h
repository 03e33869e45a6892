// ChatRenderer: renders a server ChatTemplateRequest into prompt text with a
// Jinja chat template (the GGUF's tokenizer.chat_template, a --chat-template
// file, or a built-in one chosen from the vocabulary: runtime's
// ChooseChatTemplate), the way transformers' apply_chat_template does. Tool
// definitions, tool-call arguments and template kwargs arrive as JSON text
// and are turned into template values here.
//
// A template that does not parse does not stop the server: Create() keeps
// the error, and every Render() returns it (Unimplemented -> HTTP 400), so
// /v1/completions keeps working.
//
// Thread safety: immutable after Create(); Render may run concurrently.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/template.h"
#include "server/backend.h"
#include "util/status.h"

namespace weft::server {

// JSON to a template value; objects keep their key order. Error past
// `depth` 128 or for values a template cannot hold.
StatusOr<chat::Value> ChatValueFromJson(const nlohmann::ordered_json& j,
                                        int depth = 0);

class ChatRenderer {
 public:
  // `source` empty: the built-in ChatML. `bos`/`eos`: the vocabulary's
  // token texts.
  static ChatRenderer Create(std::string_view source, std::string bos,
                             std::string eos);

  // OK, or why the template could not be parsed.
  const Status& parse_status() const { return parse_status_; }
  bool is_fallback() const { return fallback_; }

  // InvalidArgument for the template's raise_exception(msg) (with msg), bad
  // JSON in tools/kwargs/arguments, or a render error.
  StatusOr<std::string> Render(const ChatTemplateRequest& req) const;

 private:
  std::optional<chat::Template> tmpl_;  // set iff parse_status_ is OK
  Status parse_status_;
  bool fallback_ = false;
  std::string bos_;
  std::string eos_;
};

}  // namespace weft::server
