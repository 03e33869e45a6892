// Anthropic Messages request -> chat completions request.
#include <nlohmann/json.hpp>

#include "server/agent_apis.h"
#include "server/request_json.h"
#include "server/translate_json.h"

namespace weft::server {

namespace {

using json = nlohmann::json;

// Anthropic tools -> chat tools. Hosted tools (no input_schema; a type
// such as "web_search_20250305") have nothing to run them here: a 400.
ApiResult<json> Tools(const json& tools) {
  if (!tools.is_array()) return BadRequest("'tools' must be an array", "tools");
  json out = json::array();
  for (const json& t : tools) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string()) {
      return BadRequest("each tool needs a 'name'", "tools");
    }
    const json* type = Field(t, "type");
    if ((type && *type != "custom") || !t.contains("input_schema")) {
      return BadRequest(
          "only client tools with an 'input_schema' are supported", "tools");
    }
    json f = {{"name", t["name"]}, {"parameters", t["input_schema"]}};
    if (const json* d = Field(t, "description")) f["description"] = *d;
    out.push_back({{"type", "function"}, {"function", std::move(f)}});
  }
  return out;
}

// tool_choice {"type": auto|any|tool|none, "name",
// "disable_parallel_tool_use"}.
std::optional<ApiError> ToolChoice(const json& tc, json* chat) {
  if (!tc.is_object() || !tc.contains("type") || !tc["type"].is_string()) {
    return BadRequest("'tool_choice' must be an object with a 'type'",
                      "tool_choice");
  }
  const std::string type = tc["type"];
  if (type == "auto")
    (*chat)["tool_choice"] = "auto";
  else if (type == "any")
    (*chat)["tool_choice"] = "required";
  else if (type == "none")
    (*chat)["tool_choice"] = "none";
  else if (type == "tool" && tc.contains("name") && tc["name"].is_string()) {
    (*chat)["tool_choice"] = {{"type", "function"},
                              {"function", {{"name", tc["name"]}}}};
  } else {
    return BadRequest(
        "'tool_choice.type' must be auto, any, tool (with a name) or none",
        "tool_choice");
  }
  if (const json* d = Field(tc, "disable_parallel_tool_use")) {
    if (d->is_boolean() && d->get<bool>())
      (*chat)["parallel_tool_calls"] = false;
  }
  return std::nullopt;
}

// One user message's blocks: text joins into a user message; each
// tool_result becomes a tool message (in order).
std::optional<ApiError> UserBlocks(const json& content, json* messages) {
  if (!content.is_array()) {
    ApiResult<std::string> text = BlocksText(content, "messages", {"text"});
    if (!text.ok()) return text.error();
    messages->push_back({{"role", "user"}, {"content", text.value()}});
    return std::nullopt;
  }
  std::string text;
  bool has_text = false;
  for (const json& b : content) {
    const std::string type = b.is_object() ? b.value("type", "") : "";
    if (type == "tool_result") {
      if (has_text) messages->push_back({{"role", "user"}, {"content", text}});
      text.clear();
      has_text = false;
      const json* c = Field(b, "content");
      ApiResult<std::string> out =
          BlocksText(c ? *c : json(""), "messages", {"text"});
      if (!out.ok()) return out.error();
      if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string()) {
        return BadRequest("a tool_result block needs a 'tool_use_id'",
                          "messages");
      }
      messages->push_back({{"role", "tool"},
                           {"tool_call_id", b["tool_use_id"]},
                           {"content", out.value()}});
    } else if (type == "text" && b.contains("text") && b["text"].is_string()) {
      text += b["text"].get<std::string>();
      has_text = true;
    } else {
      return BadRequest("user content blocks of type '" + type +
                            "' are not supported (text and tool_result only)",
                        "messages");
    }
  }
  if (has_text) messages->push_back({{"role", "user"}, {"content", text}});
  return std::nullopt;
}

// One assistant message's blocks: text (joined) and tool_use (calls);
// thinking blocks are dropped (templates re-render reasoning their way).
std::optional<ApiError> AssistantBlocks(const json& content, json* messages) {
  json m = {{"role", "assistant"}, {"content", ""}};
  if (!content.is_array()) {
    ApiResult<std::string> text = BlocksText(content, "messages", {"text"});
    if (!text.ok()) return text.error();
    m["content"] = text.value();
    messages->push_back(std::move(m));
    return std::nullopt;
  }
  std::string text;
  json calls = json::array();
  for (const json& b : content) {
    const std::string type = b.is_object() ? b.value("type", "") : "";
    if (type == "text" && b.contains("text") && b["text"].is_string()) {
      text += b["text"].get<std::string>();
    } else if (type == "tool_use" && b.contains("id") && b.contains("name")) {
      const json* input = Field(b, "input");
      calls.push_back(
          {{"id", b["id"]},
           {"type", "function"},
           {"function",
            {{"name", b["name"]},
             {"arguments", DumpJson(input ? *input : json::object())}}}});
    } else if (type != "thinking" && type != "redacted_thinking") {
      return BadRequest(
          "assistant content blocks of type '" + type + "' are not supported",
          "messages");
    }
  }
  m["content"] = text;
  if (!calls.empty()) m["tool_calls"] = std::move(calls);
  messages->push_back(std::move(m));
  return std::nullopt;
}

std::optional<ApiError> Messages(const json& j, json* chat) {
  json messages = json::array();
  if (const json* sys = Field(j, "system")) {
    ApiResult<std::string> text = BlocksText(*sys, "system", {"text"});
    if (!text.ok()) return text.error();
    messages.push_back({{"role", "system"}, {"content", text.value()}});
  }
  const json* in = Field(j, "messages");
  if (!in || !in->is_array() || in->empty()) {
    return BadRequest("'messages' must be a non-empty array", "messages");
  }
  for (const json& m : *in) {
    const std::string role = m.is_object() ? m.value("role", "") : "";
    const json* content = m.is_object() ? Field(m, "content") : nullptr;
    if (!content)
      return BadRequest("each message needs a 'content'", "messages");
    std::optional<ApiError> e;
    if (role == "user")
      e = UserBlocks(*content, &messages);
    else if (role == "assistant")
      e = AssistantBlocks(*content, &messages);
    else
      return BadRequest("message roles must be 'user' or 'assistant'",
                        "messages");
    if (e) return e;
  }
  if (in->back().value("role", "") == "assistant") {
    return BadRequest(
        "a final assistant message (prefill) is not supported: the last "
        "message "
        "must be the user's",
        "messages");
  }
  (*chat)["messages"] = std::move(messages);
  return std::nullopt;
}

}  // namespace

ApiResult<TranslatedRequest> TranslateAnthropicRequest(std::string_view body,
                                                       bool count_tokens) {
  std::optional<ApiError> err;
  std::optional<json> parsed = ParseBody(body, &err);
  if (!parsed) return *err;
  const json& j = *parsed;
  TranslatedRequest t;
  json chat = json::object();
  if (const json* m = Field(j, "model")) chat["model"] = *m;
  if (auto e = Messages(j, &chat)) return *e;
  if (const json* tools = Field(j, "tools")) {
    ApiResult<json> out = Tools(*tools);
    if (!out.ok()) return out.error();
    if (!out.value().empty()) chat["tools"] = out.value();
  }
  if (const json* tc = Field(j, "tool_choice")) {
    if (auto e = ToolChoice(*tc, &chat)) return *e;
  }
  if (!count_tokens) {
    const json* mt = Field(j, "max_tokens");
    if (!mt) return BadRequest("'max_tokens' is required", "max_tokens");
    chat["max_tokens"] = *mt;
    for (const char* k : {"temperature", "top_p", "top_k"}) {
      if (const json* v = Field(j, k)) chat[k] = *v;
    }
    if (const json* st = Field(j, "stop_sequences")) {
      if (!st->is_array())
        return BadRequest("'stop_sequences' must be an array",
                          "stop_sequences");
      for (const json& s : *st) {
        if (!s.is_string())
          return BadRequest("'stop_sequences' must hold strings",
                            "stop_sequences");
        t.stop_sequences.push_back(s.get<std::string>());
      }
      chat["stop"] = *st;
    }
    if (const json* s = Field(j, "stream")) {
      if (!s->is_boolean())
        return BadRequest("'stream' must be a boolean", "stream");
      t.stream = s->get<bool>();
      chat["stream"] = t.stream;
    }
  }
  t.chat_json = DumpJson(chat);
  return t;
}

}  // namespace weft::server
