// ChatRenderer: renders a server ChatTemplateRequest into prompt text with a
// Jinja chat template (the GGUF's tokenizer.chat_template, a --chat-template
// file, or a built-in one chosen from the vocabulary: ChooseChatTemplate),
// the way transformers' apply_chat_template does. Tool definitions, tool-call arguments and template kwargs arrive as
// JSON text and are turned into template values here.
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
#include "gguf/gguf.h"
#include "server/backend.h"
#include "tokenizer/vocab.h"
#include "util/status.h"

namespace weft::server {

// JSON to a template value; objects keep their key order. Error past
// `depth` 128 or for values a template cannot hold.
StatusOr<chat::Value> ChatValueFromJson(const nlohmann::ordered_json& j,
                                        int depth = 0);

// Whether `text` is one token of `vocab` that a rendered prompt's
// tokenization reads as a single special token (control or user-defined).
bool IsSpecialToken(const tokenizer::Vocab& vocab, std::string_view text);

// The chat template a model is served with, and where it came from.
struct ChatTemplateChoice {
  std::string source;  // Jinja source
  // "file:PATH" (--chat-template), "gguf" (tokenizer.chat_template) or
  // "builtin:NAME" (chat/builtin_templates.h), as /v1/effective-config and
  // `weft inspect` report it.
  std::string origin;
  // Stop strings every chat request adds (a built-in template's next-turn
  // marker for models without an end-of-turn token).
  std::vector<std::string> stop;
};

// `override_source` (from `override_path`) when not empty, else the GGUF's
// tokenizer.chat_template when it is a non-empty string, else the built-in
// template the vocabulary supports (chat::ChooseBuiltinTemplate).
ChatTemplateChoice ChooseChatTemplate(const gguf::GgufFile& file,
                                      const tokenizer::Vocab& vocab,
                                      std::string_view override_source = {},
                                      std::string_view override_path = {});

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
