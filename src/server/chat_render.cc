#include "server/chat_render.h"

#include <nlohmann/json.hpp>

#include "chat/builtin_templates.h"
#include "util/strings.h"

namespace weft::server {
namespace {

using Json = nlohmann::ordered_json;


StatusOr<chat::Value> ParseJsonValue(const std::string& text,
                                     const char* what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return InvalidArgumentError(StrFormat("%s is not valid JSON", what));
  }
  return ChatValueFromJson(j);
}

// One message as HF templates see it: role, content, then the optional
// fields only when present.
StatusOr<chat::Value> MessageValue(const ChatMessage& m, bool arguments_as_text) {
  chat::Dict d;
  d.Set(chat::Value("role"), chat::Value(m.role));
  d.Set(chat::Value("content"),
        m.content ? chat::Value(*m.content) : chat::Value::None());
  if (m.name) d.Set(chat::Value("name"), chat::Value(*m.name));
  if (!m.tool_calls.empty()) {
    chat::Value::List calls;
    for (const ToolCall& c : m.tool_calls) {
      // Arguments as a dict when they are a JSON object (what most
      // templates expect, as vLLM does), else the text.
      chat::Value args(c.arguments);
      Json j = Json::parse(c.arguments, nullptr, /*allow_exceptions=*/false);
      if (!arguments_as_text && !j.is_discarded() && j.is_object()) {
        ASSIGN_OR_RETURN(args, ChatValueFromJson(j));
      }
      chat::Dict fn;
      fn.Set(chat::Value("name"), chat::Value(c.name));
      fn.Set(chat::Value("arguments"), std::move(args));
      chat::Dict call;
      call.Set(chat::Value("id"), chat::Value(c.id));
      call.Set(chat::Value("type"), chat::Value(c.type));
      call.Set(chat::Value("function"), chat::Value::MakeDict(std::move(fn)));
      calls.push_back(chat::Value::MakeDict(std::move(call)));
    }
    d.Set(chat::Value("tool_calls"), chat::Value::MakeList(std::move(calls)));
  }
  if (m.tool_call_id) {
    d.Set(chat::Value("tool_call_id"), chat::Value(*m.tool_call_id));
  }
  return chat::Value::MakeDict(std::move(d));
}

}  // namespace

StatusOr<chat::Value> ChatValueFromJson(const nlohmann::ordered_json& j, int depth) {
  using Json = nlohmann::ordered_json;
  if (depth > 128) return InvalidArgumentError("JSON nested too deeply");
  switch (j.type()) {
    case Json::value_t::null:
      return chat::Value::None();
    case Json::value_t::boolean:
      return chat::Value(j.get<bool>());
    case Json::value_t::number_integer:
      return chat::Value(j.get<int64_t>());
    case Json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) {
        return chat::Value(static_cast<int64_t>(u));
      }
      return chat::Value(static_cast<double>(u));
    }
    case Json::value_t::number_float:
      return chat::Value(j.get<double>());
    case Json::value_t::string:
      return chat::Value(j.get<std::string>());
    case Json::value_t::array: {
      chat::Value::List items;
      for (const Json& x : j) {
        ASSIGN_OR_RETURN(chat::Value v, ChatValueFromJson(x, depth + 1));
        items.push_back(std::move(v));
      }
      return chat::Value::MakeList(std::move(items));
    }
    case Json::value_t::object: {
      chat::Dict d;
      for (const auto& [k, x] : j.items()) {
        ASSIGN_OR_RETURN(chat::Value v, ChatValueFromJson(x, depth + 1));
        d.Set(chat::Value(k), std::move(v));
      }
      return chat::Value::MakeDict(std::move(d));
    }
    default:
      return InvalidArgumentError("unsupported JSON value");
  }
}

ChatRenderer ChatRenderer::Create(std::string_view source, std::string bos,
                                  std::string eos) {
  ChatRenderer r;
  r.bos_ = std::move(bos);
  r.eos_ = std::move(eos);
  if (source.empty()) {
    source = chat::BuiltinTemplateSource(chat::BuiltinTemplate::kChatMl);
    r.fallback_ = true;
  }
  StatusOr<chat::Template> t = chat::Template::Parse(source);
  if (t.ok()) {
    r.tmpl_ = std::move(*t);
  } else {
    r.parse_status_ = t.status();
  }
  return r;
}

StatusOr<std::string> ChatRenderer::Render(
    const ChatTemplateRequest& req) const {
  if (!tmpl_) {
    return Status(StatusCode::kUnimplemented,
                  "the model's chat template cannot be used (" +
                      parse_status_.message() +
                      "); use /v1/completions or start the server with "
                      "--chat-template");
  }
  chat::Value::List messages;
  for (const ChatMessage& m : req.messages) {
    ASSIGN_OR_RETURN(chat::Value v, MessageValue(m, req.arguments_as_text));
    messages.push_back(std::move(v));
  }
  chat::Value tools;
  if (!req.tools_json.empty()) {
    ASSIGN_OR_RETURN(tools, ParseJsonValue(req.tools_json, "tools"));
  }
  chat::Value kwargs;
  if (!req.kwargs_json.empty()) {
    chat::Dict d;
    for (const auto& [name, text] : req.kwargs_json) {
      ASSIGN_OR_RETURN(chat::Value v,
                       ParseJsonValue(text, "chat_template_kwargs"));
      d.Set(chat::Value(name), std::move(v));
    }
    kwargs = chat::Value::MakeDict(std::move(d));
  }
  StatusOr<std::string> out = chat::RenderChat(
      *tmpl_, chat::Value::MakeList(std::move(messages)), bos_, eos_,
      req.add_generation_prompt, tools, kwargs);
  if (!out.ok()) {
    if (chat::IsRaisedException(out.status())) {
      return InvalidArgumentError(out.status().message());
    }
    return InvalidArgumentError("chat template: " + out.status().message());
  }
  return out;
}

}  // namespace weft::server
