// Which chat template a model file is served with: a --chat-template file,
// the GGUF's tokenizer.chat_template, or the built-in template its
// vocabulary supports (chat/builtin_templates.h). `weft serve`, `weft chat`,
// `weft inspect` and `weft template` all choose through here, so they agree.
//
// Thread safety: plain functions over values the caller owns.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/vocab.h"

namespace weft::runtime {

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

}  // namespace weft::runtime
