#include "runtime/chat_template_choice.h"

#include <utility>

#include "chat/builtin_templates.h"
#include "util/status.h"

namespace weft::runtime {

bool IsSpecialToken(const tokenizer::Vocab& vocab, std::string_view text) {
  const tokenizer::TokenId id = vocab.Find(text);
  return id != tokenizer::kNoToken &&
         vocab.HasAttr(id, tokenizer::kAttrControl | tokenizer::kAttrUserDefined);
}

ChatTemplateChoice ChooseChatTemplate(const gguf::GgufFile& file,
                                      const tokenizer::Vocab& vocab,
                                      std::string_view override_source,
                                      std::string_view override_path) {
  ChatTemplateChoice c;
  if (!override_source.empty()) {
    c.source = std::string(override_source);
    c.origin = "file:" + std::string(override_path);
    return c;
  }
  if (file.Has("tokenizer.chat_template")) {
    StatusOr<std::string> s = file.GetString("tokenizer.chat_template");
    if (s.ok() && !s->empty()) {
      c.source = std::move(*s);
      c.origin = "gguf";
      return c;
    }
  }
  const chat::BuiltinTemplate t = chat::ChooseBuiltinTemplate(
      [&](std::string_view text) { return IsSpecialToken(vocab, text); });
  c.source = std::string(chat::BuiltinTemplateSource(t));
  c.origin = "builtin:" + std::string(chat::BuiltinTemplateName(t));
  c.stop = chat::BuiltinTemplateStops(t);
  return c;
}

}  // namespace weft::runtime
