// `weft template MODEL --messages FILE.json`: renders a chat into the prompt
// text the model sees, with the model's own chat template
// (tokenizer.chat_template) or --chat-template FILE, falling back to ChatML.
#include "chat/template.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/command.h"
#include "apps/flags.h"
#include "gguf/gguf.h"
#include "server/chat_render.h"
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

// The text of special token `key` (e.g. tokenizer.ggml.bos_token_id).
std::string TokenText(const gguf::GgufFile& f,
                      const std::vector<std::string>& tokens, const char* key) {
  auto id = f.GetUint32(key);
  if (!id.ok() || *id >= tokens.size()) return "";
  return tokens[*id];
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
      "MODEL may be omitted with --chat-template.");
  std::string messages_path, template_path, tools_path, bos, eos;
  bool add_generation_prompt = false;
  flags.String("messages", &messages_path, "JSON file with the chat");
  flags.Bool("add-generation-prompt", &add_generation_prompt,
             "end with the assistant turn's opening");
  flags.String("chat-template", &template_path,
               "Jinja template file to use instead of the model's");
  flags.String("tools", &tools_path, "JSON file with a list of tools");
  flags.String("bos", &bos, "BOS token text (default: the model's)");
  flags.String("eos", &eos, "EOS token text (default: the model's)");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  if (args.size() > 1 || messages_path.empty() ||
      (args.empty() && template_path.empty())) {
    std::fprintf(stderr, "%s", flags.Usage().c_str());
    return 2;
  }

  std::string source;
  if (!args.empty()) {
    auto file = gguf::GgufFile::Open(args[0]);
    if (!file.ok()) return Fail(2, file.status().ToString());
    auto tokens = (*file)->GetStringArray("tokenizer.ggml.tokens");
    if (tokens.ok()) {
      if (!flags.WasSet("bos")) {
        bos = TokenText(**file, *tokens, "tokenizer.ggml.bos_token_id");
      }
      if (!flags.WasSet("eos")) {
        eos = TokenText(**file, *tokens, "tokenizer.ggml.eos_token_id");
      }
    }
    auto tmpl = (*file)->GetString("tokenizer.chat_template");
    if (tmpl.ok()) source = *tmpl;
  }
  if (!template_path.empty()) {
    auto text = ReadFile(template_path);
    if (!text.ok()) return Fail(2, text.status().ToString());
    source = *text;
  }
  if (source.empty()) source = std::string(chat::ChatMlTemplate());

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
