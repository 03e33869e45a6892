#include "chat/builtin_templates.h"

#include <algorithm>

#include "util/enum_name.h"

namespace weft::chat {
namespace {

// A message's text: its content when it is a string, else "" (a tool-call
// only assistant message has content None).
#define WEFT_CONTENT \
  "(message['content'] if message['content'] is string else '')"

// Gemma's turns: a system message is folded into the first user turn (Gemma
// has no system role), the assistant is "model".
constexpr std::string_view kGemma =
    "{%- if messages and messages[0]['role'] == 'system' -%}\n"
    "{%- set message = messages[0] -%}\n"
    "{%- set prefix = " WEFT_CONTENT " + '\\n\\n' -%}\n"
    "{%- set loop_messages = messages[1:] -%}\n"
    "{%- else -%}\n"
    "{%- set prefix = '' -%}\n"
    "{%- set loop_messages = messages -%}\n"
    "{%- endif -%}\n"
    "{%- for message in loop_messages -%}\n"
    "{%- set role = 'model' if message['role'] == 'assistant' "
    "else message['role'] -%}\n"
    "{{- '<start_of_turn>' + role + '\\n' + (prefix if loop.first else '') + "
    WEFT_CONTENT " | trim + '<end_of_turn>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<start_of_turn>model\\n' -}}\n"
    "{%- endif -%}\n";

constexpr std::string_view kLlama3 =
    "{%- for message in messages -%}\n"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
    WEFT_CONTENT " | trim + '<|eot_id|>' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}\n"
    "{%- endif -%}\n";

constexpr std::string_view kChatMl =
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' + " WEFT_CONTENT
    " + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- endif -%}\n";

// A transcript any model can continue: system text first, then one line
// per turn ("User: ...", "Assistant: ..."), other roles by their name.
constexpr std::string_view kPlain =
    "{%- for message in messages -%}\n"
    "{%- if message['role'] == 'system' -%}\n"
    "{{- " WEFT_CONTENT " | trim + '\\n\\n' -}}\n"
    "{%- elif message['role'] == 'user' -%}\n"
    "{{- 'User: ' + " WEFT_CONTENT " | trim + '\\n' -}}\n"
    "{%- elif message['role'] == 'assistant' -%}\n"
    "{{- 'Assistant: ' + " WEFT_CONTENT " | trim + '\\n' -}}\n"
    "{%- else -%}\n"
    "{{- message['role'] | capitalize + ': ' + " WEFT_CONTENT
    " | trim + '\\n' -}}\n"
    "{%- endif -%}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- 'Assistant:' -}}\n"
    "{%- endif -%}\n";

#undef WEFT_CONTENT

constexpr BuiltinTemplate kPreference[] = {
    BuiltinTemplate::kGemma, BuiltinTemplate::kLlama3, BuiltinTemplate::kChatMl};

}  // namespace

BuiltinTemplate ChooseBuiltinTemplate(
    const std::function<bool(std::string_view)>& is_special) {
  for (BuiltinTemplate t : kPreference) {
    const std::vector<std::string_view> markers = BuiltinTemplateMarkers(t);
    if (std::all_of(markers.begin(), markers.end(), is_special)) return t;
  }
  return BuiltinTemplate::kPlain;
}

std::string_view BuiltinTemplateName(BuiltinTemplate t) {
  static constexpr std::string_view kNames[] = {"gemma", "llama3", "chatml",
                                                "plain"};
  return EnumName<BuiltinTemplate::kPlain>(t, kNames, "plain");
}

std::string_view BuiltinTemplateSource(BuiltinTemplate t) {
  switch (t) {
    case BuiltinTemplate::kGemma: return kGemma;
    case BuiltinTemplate::kLlama3: return kLlama3;
    case BuiltinTemplate::kChatMl: return kChatMl;
    case BuiltinTemplate::kPlain: return kPlain;
  }
  return kPlain;
}

std::vector<std::string_view> BuiltinTemplateMarkers(BuiltinTemplate t) {
  switch (t) {
    case BuiltinTemplate::kGemma:
      return {"<start_of_turn>", "<end_of_turn>"};
    case BuiltinTemplate::kLlama3:
      return {"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"};
    case BuiltinTemplate::kChatMl:
      return {"<|im_start|>", "<|im_end|>"};
    case BuiltinTemplate::kPlain:
      return {};
  }
  return {};
}

std::vector<std::string> BuiltinTemplateStops(BuiltinTemplate t) {
  if (t == BuiltinTemplate::kPlain) return {"\nUser:"};
  return {};
}

}  // namespace weft::chat
