// `weft template MODEL --messages FILE.json`: renders a chat into the prompt
// text the model sees, with the model's own chat template
// (tokenizer.chat_template) or --chat-template FILE; a model without one
// gets the built-in template its vocabulary supports, as `weft serve` does.
#include "chat/template.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/command.h"
#include "apps/flags.h"
#include "chat/builtin_templates.h"
#include "gguf/gguf.h"
#include "runtime/chat_template_choice.h"
#include "server/chat_render.h"
#include "tokenizer/vocab.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using Json = nlohmann::ordered_json;


StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

StatusOr<Json> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
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

int RunTemplate(int argc, char** argv) {
  FlagSet flags(
      "weft template [MODEL] --messages FILE.json",
      "Prints the prompt that MODEL's chat template makes of a chat. FILE is "
      "a JSON list of messages, or an object with \"messages\" and optional "
      "\"tools\" and \"chat_template_kwargs\" (an OpenAI-style request). "
      "MODEL may be omitted with --chat-template or --builtin. The template "
      "used is named on stderr.");
  std::string messages_path, template_path, tools_path, bos, eos, builtin;
  bool add_generation_prompt = false;
  flags.String("messages", &messages_path, "JSON file with the chat");
  flags.Bool("add-generation-prompt", &add_generation_prompt,
             "end with the assistant turn's opening");
  flags.String("chat-template", &template_path,
               "Jinja template file to use instead of the model's");
  flags.String("builtin", &builtin,
               "use a built-in template: gemma, llama3, chatml or plain");
  flags.String("tools", &tools_path, "JSON file with a list of tools");
  flags.String("bos", &bos, "BOS token text (default: the model's)");
  flags.String("eos", &eos, "EOS token text (default: the model's)");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  if (args.size() > 1 || messages_path.empty() ||
      (args.empty() && template_path.empty() && builtin.empty())) {
    std::fprintf(stderr, "%s", flags.Usage().c_str());
    return 2;
  }
  if (!template_path.empty() && !builtin.empty()) {
    return Fail(2, "--chat-template and --builtin exclude each other");
  }

  std::string source, origin;
  if (!template_path.empty()) {
    auto text = ReadFile(template_path);
    if (!text.ok()) return Fail(2, text.status().ToString());
    source = *text;
    origin = "file:" + template_path;
  }
  if (!builtin.empty()) {
    std::optional<chat::BuiltinTemplate> t = BuiltinNamed(builtin);
    if (!t) {
      return Fail(2, "--builtin must be gemma, llama3, chatml or plain, not '" +
                         CEscape(builtin) + "'");
    }
    source = std::string(chat::BuiltinTemplateSource(*t));
    origin = "builtin:" + builtin;
  }
  if (!args.empty()) {
    auto file = gguf::GgufFile::Open(args[0]);
    if (!file.ok()) return Fail(2, file.status().ToString());
    auto vocab = tokenizer::LoadVocab(**file);
    if (!vocab.ok()) return Fail(2, vocab.status().ToString());
    if (!flags.WasSet("bos")) bos = TokenText(*vocab, vocab->bos);
    if (!flags.WasSet("eos")) eos = TokenText(*vocab, vocab->eos);
    if (source.empty()) {
      runtime::ChatTemplateChoice c = runtime::ChooseChatTemplate(**file, *vocab);
      source = std::move(c.source);
      origin = std::move(c.origin);
    }
  }
  std::fprintf(stderr, "weft template: chat template %s\n", origin.c_str());

  auto request = ReadJson(messages_path);
  if (!request.ok()) return Fail(2, request.status().ToString());
  Json messages_json = *request, tools_json, kwargs_json;
  if (request->is_object()) {
    if (!request->contains("messages")) {
      return Fail(2, messages_path + ": no \"messages\"");
    }
    messages_json = (*request)["messages"];
    if (request->contains("tools")) tools_json = (*request)["tools"];
    if (request->contains("chat_template_kwargs")) {
      kwargs_json = (*request)["chat_template_kwargs"];
    }
  }
  if (!messages_json.is_array()) {
    return Fail(2, messages_path + ": messages must be a JSON list");
  }
  if (!tools_path.empty()) {
    auto t = ReadJson(tools_path);
    if (!t.ok()) return Fail(2, t.status().ToString());
    tools_json = *t;
  }

  auto messages = server::ChatValueFromJson(messages_json);
  if (!messages.ok()) return Fail(2, messages.status().ToString());
  chat::Value tools;
  if (!tools_json.is_null()) {
    auto t = server::ChatValueFromJson(tools_json);
    if (!t.ok()) return Fail(2, t.status().ToString());
    tools = *t;
  }
  chat::Value kwargs;
  if (kwargs_json.is_object()) {
    auto k = server::ChatValueFromJson(kwargs_json);
    if (!k.ok()) return Fail(2, k.status().ToString());
    kwargs = *k;
  }

  auto tmpl = chat::Template::Parse(source);
  if (!tmpl.ok()) return Fail(2, tmpl.status().message());
  auto prompt = chat::RenderChat(*tmpl, *messages, bos, eos,
                                 add_generation_prompt, tools, kwargs);
  if (!prompt.ok()) {
    if (chat::IsRaisedException(prompt.status())) {
      return Fail(2, "the chat template rejected the chat: " +
                         prompt.status().message());
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
