// Built-in chat templates for GGUF files that carry none, chosen from the
// vocabulary the way llama.cpp's built-in list is: a template is used only
// when every control marker it writes is one special token of the model, so
// a chat never shows the model a marker as plain text.
//
//   BuiltinTemplate t = ChooseBuiltinTemplate(
//       [&](std::string_view text) { return IsSpecialToken(vocab, text); });
//   LOG(INFO) << "chat template: builtin:" << BuiltinTemplateName(t);
//
// The order of preference: Gemma turns (<start_of_turn>, <end_of_turn>),
// Llama 3 headers (<|start_header_id|>, <|end_header_id|>, <|eot_id|>),
// ChatML (<|im_start|>, <|im_end|>), then a plain "User:"/"Assistant:"
// transcript, which needs no special token and stops at the next "\nUser:".
//
// None of them writes BOS: the caller puts the model's leading special
// tokens in front of the rendered text, as for any template that does not
// write them itself.
//
// Thread safety: pure functions over constant data.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::chat {

enum class BuiltinTemplate { kGemma, kLlama3, kChatMl, kPlain };

// is_special(text): whether `text` is one token of the model's vocabulary
// that the tokenizer reads as a single special (control or user-defined)
// token in a rendered prompt.
BuiltinTemplate ChooseBuiltinTemplate(
    const std::function<bool(std::string_view)>& is_special);

// "gemma", "llama3", "chatml", "plain".
std::string_view BuiltinTemplateName(BuiltinTemplate t);

// The Jinja source (rendered with chat::RenderChat like any GGUF template).
std::string_view BuiltinTemplateSource(BuiltinTemplate t);

// The special tokens the template writes (what ChooseBuiltinTemplate
// checks); empty for kPlain.
std::vector<std::string_view> BuiltinTemplateMarkers(BuiltinTemplate t);

// Stop strings a chat request adds with this template: the turn marker a
// model without end-of-turn tokens writes next ("\nUser:" for kPlain).
std::vector<std::string> BuiltinTemplateStops(BuiltinTemplate t);

}  // namespace weft::chat
