// OpenAI Responses request -> chat completions request (stateless).
#include <nlohmann/json.hpp>

#include "server/agent_apis.h"
#include "server/request_json.h"
#include "server/translate_json.h"

namespace weft::server {

namespace {

using json = nlohmann::json;

// Function tools -> chat tools; hosted tools (web_search, file_search,
// ...) have nothing to run them here: a 400.
ApiResult<json> Tools(const json& tools) {
  if (!tools.is_array()) return BadRequest("'tools' must be an array", "tools");
  json out = json::array();
  for (const json& t : tools) {
    if (!t.is_object() || t.value("type", "") != "function" ||
        !t.contains("name")) {
      return BadRequest(
          "only tools of type 'function' (with a 'name') are supported",
          "tools");
    }
    json f = {{"name", t["name"]}};
    for (const char* k : {"description", "parameters", "strict"}) {
      if (const json* v = Field(t, k)) f[k] = *v;
    }
    out.push_back({{"type", "function"}, {"function", std::move(f)}});
  }
  return out;
}

// A message item's role and content.
std::optional<ApiError> MessageItem(const json& item, json* messages) {
  std::string role = item.value("role", "");
  if (role == "developer") role = "system";
  if (role != "user" && role != "system" && role != "assistant") {
    return BadRequest(
        "message roles must be user, system, developer or assistant", "input");
  }
  const json* content = Field(item, "content");
  ApiResult<std::string> text =
      BlocksText(content ? *content : json(""), "input",
                 {"input_text", "output_text", "text"});
  if (!text.ok()) return text.error();
  messages->push_back({{"role", role}, {"content", text.value()}});
  return std::nullopt;
}

// function_call: a call of the assistant's (joined to the assistant
// message before it, if any).
std::optional<ApiError> FunctionCallItem(const json& item, json* messages) {
  if (!item.contains("call_id") || !item.contains("name") ||
      !item.contains("arguments")) {
    return BadRequest("a function_call item needs call_id, name and arguments",
                      "input");
  }
  json call = {
      {"id", item["call_id"]},
      {"type", "function"},
      {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}};
  if (messages->empty() || messages->back()["role"] != "assistant") {
    messages->push_back({{"role", "assistant"},
                         {"content", ""},
                         {"tool_calls", json::array()}});
  }
  json& last = messages->back();
  if (!last.contains("tool_calls")) last["tool_calls"] = json::array();
  last["tool_calls"].push_back(std::move(call));
  return std::nullopt;
}

std::optional<ApiError> Input(const json& j, json* messages) {
  if (const json* ins = Field(j, "instructions")) {
    if (!ins->is_string())
      return BadRequest("'instructions' must be a string", "instructions");
    messages->push_back({{"role", "system"}, {"content", *ins}});
  }
  const json* input = Field(j, "input");
  if (!input) return BadRequest("'input' is required", "input");
  if (input->is_string()) {
    messages->push_back({{"role", "user"}, {"content", *input}});
    return std::nullopt;
  }
  if (!input->is_array())
    return BadRequest("'input' must be a string or an array", "input");
  for (const json& item : *input) {
    if (!item.is_object())
      return BadRequest("'input' items must be objects", "input");
    const std::string type = item.value("type", "message");
    std::optional<ApiError> e;
    if (type == "message") {
      e = MessageItem(item, messages);
    } else if (type == "function_call") {
      e = FunctionCallItem(item, messages);
    } else if (type == "function_call_output") {
      const json* out = Field(item, "output");
      if (!item.contains("call_id") || !out) {
        return BadRequest(
            "a function_call_output item needs call_id and output", "input");
      }
      ApiResult<std::string> text =
          BlocksText(*out, "input", {"input_text", "output_text", "text"});
      if (!text.ok()) return text.error();
      messages->push_back({{"role", "tool"},
                           {"tool_call_id", item["call_id"]},
                           {"content", text.value()}});
    } else if (type != "reasoning") {  // earlier reasoning is not replayed
      return BadRequest("input items of type '" + type + "' are not supported",
                        "input");
    }
    if (e) return e;
  }
  return std::nullopt;
}

// tool_choice: "auto" | "none" | "required" | {"type": "function", "name"}.
std::optional<ApiError> ToolChoice(const json& tc, json* chat) {
  if (tc.is_string()) {
    (*chat)["tool_choice"] = tc;
    return std::nullopt;
  }
  if (tc.is_object() && tc.value("type", "") == "function" &&
      tc.contains("name")) {
    (*chat)["tool_choice"] = {{"type", "function"},
                              {"function", {{"name", tc["name"]}}}};
    return std::nullopt;
  }
  return BadRequest("'tool_choice' must be auto, none, required or a function",
                    "tool_choice");
}

// text.format: text | json_object | json_schema -> response_format.
std::optional<ApiError> TextFormat(const json& text, json* chat) {
  const json* f = text.is_object() ? Field(text, "format") : nullptr;
  if (!f) return std::nullopt;
  const std::string type = f->is_object() ? f->value("type", "") : "";
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    (*chat)["response_format"] = {{"type", "json_object"}};
  } else if (type == "json_schema" && f->contains("schema")) {
    json s = {{"name", f->value("name", "response")},
              {"schema", (*f)["schema"]}};
    if (const json* strict = Field(*f, "strict")) s["strict"] = *strict;
    (*chat)["response_format"] = {{"type", "json_schema"},
                                  {"json_schema", std::move(s)}};
  } else {
    return BadRequest(
        "'text.format.type' must be text, json_object or json_schema (with a "
        "schema)",
        "text.format");
  }
  return std::nullopt;
}

}  // namespace

ApiResult<TranslatedRequest> TranslateResponsesRequest(std::string_view body) {
  std::optional<ApiError> err;
  std::optional<json> parsed = ParseBody(body, &err);
  if (!parsed) return *err;
  const json& j = *parsed;
  if (const json* store = Field(j, "store");
      store && store->is_boolean() && store->get<bool>()) {
    return BadRequest(
        "'store' is not supported: this server keeps no responses (send store: "
        "false)",
        "store");
  }
  if (Field(j, "previous_response_id")) {
    return BadRequest(
        "'previous_response_id' is not supported: this server keeps no "
        "responses; "
        "send the whole conversation in 'input'",
        "previous_response_id");
  }
  TranslatedRequest t;
  json chat = {{"messages", json::array()}};
  if (const json* m = Field(j, "model")) chat["model"] = *m;
  if (auto e = Input(j, &chat["messages"])) return *e;
  if (const json* tools = Field(j, "tools")) {
    ApiResult<json> out = Tools(*tools);
    if (!out.ok()) return out.error();
    if (!out.value().empty()) chat["tools"] = out.value();
  }
  if (const json* tc = Field(j, "tool_choice")) {
    if (auto e = ToolChoice(*tc, &chat)) return *e;
  }
  if (const json* text = Field(j, "text")) {
    if (auto e = TextFormat(*text, &chat)) return *e;
  }
  if (const json* mt = Field(j, "max_output_tokens")) chat["max_tokens"] = *mt;
  for (const char* k : {"temperature", "top_p", "parallel_tool_calls"}) {
    if (const json* v = Field(j, k)) chat[k] = *v;
  }
  if (const json* s = Field(j, "stream")) {
    if (!s->is_boolean())
      return BadRequest("'stream' must be a boolean", "stream");
    t.stream = s->get<bool>();
    chat["stream"] = t.stream;
  }
  t.chat_json = DumpJson(chat);
  return t;
}

}  // namespace weft::server
