// `weft template MODEL --messages FILE.json`: renders a chat into the prompt
// text the model sees, with the model's own chat template
// (tokenizer.chat_template) or --chat-template FILE; a model without one
// gets the built-in template its vocabulary supports, as `weft serve` does.
#include "chat/template.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/command.h"
#include "apps/flags.h"
#include "chat/builtin_templates.h"
#include "gguf/gguf.h"
#include "runtime/chat_template_choice.h"
#include "server/chat_render.h"
#include "tokenizer/vocab.h"
#include "util/file.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using Json = nlohmann::ordered_json;


StatusOr<Json> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError(path + ": invalid JSON");
  return j;
}

std::string TokenText(const tokenizer::Vocab& v, tokenizer::TokenId id) {
  return v.Valid(id) ? v.tokens[static_cast<size_t>(id)] : std::string();
}

// The built-in template called `name`, or nullopt.
std::optional<chat::BuiltinTemplate> BuiltinNamed(const std::string& name) {
  for (chat::BuiltinTemplate t :
       {chat::BuiltinTemplate::kGemma, chat::BuiltinTemplate::kLlama3,
        chat::BuiltinTemplate::kChatMl, chat::BuiltinTemplate::kPlain}) {
    if (chat::BuiltinTemplateName(t) == name) return t;
  }
  return std::nullopt;
}

int Fail(int code, const std::string& msg) {
  std::fprintf(stderr, "weft template: %s\n", msg.c_str());
  return code;
}

// The flags and argument of `weft template`.
struct TemplateOptions {
  // The model file (MODEL); empty with --chat-template or --builtin.
  std::string model_path;
  // JSON file with the chat (required).
  std::string messages_path;
  // End with the assistant turn's opening.
  bool add_generation_prompt = false;
  // Jinja template file to use instead of the model's; empty = none.
  std::string template_path;
  // Built-in template name; empty = none.
  std::string builtin;
  // JSON file with a list of tools; empty = none.
  std::string tools_path;
  // BOS/EOS token text, and whether given (else the model's).
  std::string bos;
  std::string eos;
  bool bos_set = false;
  bool eos_set = false;
};

// The chat to render, as template values.
struct TemplateChat {
  chat::Value messages;
  chat::Value tools;
  chat::Value kwargs;
};

// Parses and checks the flags; false with *rc the exit code when the
// command is done.
bool ParseTemplateFlags(int argc, char** argv, TemplateOptions* o, int* rc) {
  FlagSet flags(
      "weft template [MODEL] --messages FILE.json",
      "Prints the prompt that MODEL's chat template makes of a chat. FILE is "
      "a JSON list of messages, or an object with \"messages\" and optional "
      "\"tools\" and \"chat_template_kwargs\" (an OpenAI-style request). "
      "MODEL may be omitted with --chat-template or --builtin. The template "
      "used is named on stderr.");
  flags.String("messages", &o->messages_path, "JSON file with the chat");
  flags.Bool("add-generation-prompt", &o->add_generation_prompt,
             "end with the assistant turn's opening");
  flags.String("chat-template", &o->template_path,
               "Jinja template file to use instead of the model's");
  flags.String("builtin", &o->builtin, "use a built-in template: gemma, llama3, chatml or plain");
  flags.String("tools", &o->tools_path, "JSON file with a list of tools");
  flags.String("bos", &o->bos, "BOS token text (default: the model's)");
  flags.String("eos", &o->eos, "EOS token text (default: the model's)");
  std::vector<std::string> args;
  if (!flags.Parse(argc, argv, &args, rc)) return false;
  *rc = 2;
  if (args.size() > 1 || o->messages_path.empty() ||
      (args.empty() && o->template_path.empty() && o->builtin.empty())) {
    std::fprintf(stderr, "%s", flags.Usage().c_str());
    return false;
  }
  if (!o->template_path.empty() && !o->builtin.empty()) {
    Fail(2, "--chat-template and --builtin exclude each other");
    return false;
  }
  if (!args.empty()) o->model_path = args[0];
  o->bos_set = flags.WasSet("bos");
  o->eos_set = flags.WasSet("eos");
  return true;
}

// The template's source and where it came from (--chat-template,
// --builtin, or the model's choice); fills in the model's BOS/EOS text.
// Returns 0, or the exit code.
int ChooseTemplate(TemplateOptions* o, std::string* source, std::string* origin) {
  if (!o->template_path.empty()) {
    auto text = ReadFileToString(o->template_path);
    if (!text.ok()) return Fail(2, text.status().ToString());
    *source = *text;
    *origin = "file:" + o->template_path;
  }
  if (!o->builtin.empty()) {
    std::optional<chat::BuiltinTemplate> t = BuiltinNamed(o->builtin);
    if (!t) {
      return Fail(2, "--builtin must be gemma, llama3, chatml or plain, not '" +
                         CEscape(o->builtin) + "'");
    }
    *source = std::string(chat::BuiltinTemplateSource(*t));
    *origin = "builtin:" + o->builtin;
  }
  if (o->model_path.empty()) return 0;
  auto file = gguf::GgufFile::Open(o->model_path);
  if (!file.ok()) return Fail(2, file.status().ToString());
  auto vocab = tokenizer::LoadVocab(**file);
  if (!vocab.ok()) return Fail(2, vocab.status().ToString());
  if (!o->bos_set) o->bos = TokenText(*vocab, vocab->bos);
  if (!o->eos_set) o->eos = TokenText(*vocab, vocab->eos);
  if (source->empty()) {
    runtime::ChatTemplateChoice c = runtime::ChooseChatTemplate(**file, *vocab);
    *source = std::move(c.source);
    *origin = std::move(c.origin);
  }
  return 0;
}

// Reads the chat (and --tools) into template values. Returns 0, or the
// exit code.
int ReadTemplateChat(const TemplateOptions& o, TemplateChat* out) {
  auto request = ReadJson(o.messages_path);
  if (!request.ok()) return Fail(2, request.status().ToString());
  Json messages_json = *request, tools_json, kwargs_json;
  if (request->is_object()) {
    if (!request->contains("messages")) return Fail(2, o.messages_path + ": no \"messages\"");
    messages_json = (*request)["messages"];
    if (request->contains("tools")) tools_json = (*request)["tools"];
    if (request->contains("chat_template_kwargs")) {
      kwargs_json = (*request)["chat_template_kwargs"];
    }
  }
  if (!messages_json.is_array()) {
    return Fail(2, o.messages_path + ": messages must be a JSON list");
  }
  if (!o.tools_path.empty()) {
    auto t = ReadJson(o.tools_path);
    if (!t.ok()) return Fail(2, t.status().ToString());
    tools_json = *t;
  }
  auto messages = server::ChatValueFromJson(messages_json);
  if (!messages.ok()) return Fail(2, messages.status().ToString());
  out->messages = *messages;
  if (!tools_json.is_null()) {
    auto t = server::ChatValueFromJson(tools_json);
    if (!t.ok()) return Fail(2, t.status().ToString());
    out->tools = *t;
  }
  if (kwargs_json.is_object()) {
    auto k = server::ChatValueFromJson(kwargs_json);
    if (!k.ok()) return Fail(2, k.status().ToString());
    out->kwargs = *k;
  }
  return 0;
}

int RunTemplate(int argc, char** argv) {
  TemplateOptions o;
  if (int rc; !ParseTemplateFlags(argc, argv, &o, &rc)) return rc;
  std::string source, origin;
  if (int rc = ChooseTemplate(&o, &source, &origin); rc != 0) return rc;
  std::fprintf(stderr, "weft template: chat template %s\n", origin.c_str());
  TemplateChat conversation;
  if (int rc = ReadTemplateChat(o, &conversation); rc != 0) return rc;

  auto tmpl = chat::Template::Parse(source);
  if (!tmpl.ok()) return Fail(2, tmpl.status().message());
  auto prompt = chat::RenderChat(*tmpl, conversation.messages, o.bos, o.eos,
                                 o.add_generation_prompt, conversation.tools, conversation.kwargs);
  if (!prompt.ok()) {
    if (chat::IsRaisedException(prompt.status())) {
      return Fail(2, "the chat template rejected the chat: " + prompt.status().message());
    }
    int code = prompt.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
    return Fail(code, prompt.status().message());
  }
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return 0;
}

}  // namespace

WEFT_COMMAND("template", "render a chat with a model's chat template",
             RunTemplate);

}  // namespace weft::apps
