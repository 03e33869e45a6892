#include "server/openai_messages.h"

#include <optional>
#include <string>
#include <utility>

#include "server/openai_request.h"
#include "util/strings.h"

namespace weft::server {

namespace {

using json = nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Text of a message `content`: string, null, or text parts.
bool ContentText(const json& c, std::optional<std::string>* out, std::string* why) {
  if (c.is_null()) return true;
  if (c.is_string()) {
    *out = c.get<std::string>();
    return true;
  }
  if (!c.is_array()) {
    *why = "content must be a string, null, or a list of parts";
    return false;
  }
  std::string text;
  for (size_t i = 0; i < c.size(); ++i) {
    const json& part = c[i];
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      *why = "content parts must be objects with a 'type'";
      return false;
    }
    if (part["type"] != "text") {
      *why = "unsupported content part type '" +
             CEscape(part["type"].get<std::string>()) + "' (text only)";
      return false;
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      *why = "text parts need a string 'text'";
      return false;
    }
    if (i > 0) text += "\n";
    text += part["text"].get<std::string>();
  }
  *out = std::move(text);
  return true;
}

// A message's "tool_calls": a list of {"id", "function": {"name", "arguments"}}.
bool ParseToolCalls(const json& tc, std::vector<ToolCall>* out, std::string* why) {
  if (!tc.is_array()) {
    *why = "'tool_calls' must be a list";
    return false;
  }
  for (const json& call : tc) {
    if (!call.is_object() || !call.contains("function") ||
        !call["function"].is_object()) {
      *why = "each tool call needs a 'function' object";
      return false;
    }
    ToolCall t;
    if (call.contains("id") && call["id"].is_string()) t.id = call["id"];
    const json& fn = call["function"];
    if (!fn.contains("name") || !fn["name"].is_string()) {
      *why = "tool call function needs a string 'name'";
      return false;
    }
    t.name = fn["name"].get<std::string>();
    if (fn.contains("arguments")) {
      t.arguments = fn["arguments"].is_string()
                        ? fn["arguments"].get<std::string>()
                        : Dump(fn["arguments"]);
    }
    out->push_back(std::move(t));
  }
  return true;
}

// One entry of "messages"; *why (on false) does not yet name the entry.
bool ParseMessage(const json& m, ChatMessage* cm, std::string* why) {
  if (!m.is_object()) {
    *why = "must be an object";
    return false;
  }
  auto role = m.find("role");
  if (role == m.end() || !role->is_string()) {
    *why = "'role' must be a string";
    return false;
  }
  cm->role = role->get<std::string>();
  static const char* kRoles[] = {"system", "user", "assistant", "tool",
                                 "developer", "function"};
  bool known = false;
  for (const char* r : kRoles) known |= cm->role == r;
  if (!known) {
    *why = "unknown role '" + CEscape(cm->role) + "'";
    return false;
  }
  if (auto c = m.find("content"); c != m.end()) {
    if (!ContentText(*c, &cm->content, why)) return false;
  }
  if (auto n = m.find("name"); n != m.end() && !n->is_null()) {
    if (!n->is_string()) {
      *why = "'name' must be a string";
      return false;
    }
    cm->name = n->get<std::string>();
  }
  if (auto t = m.find("tool_call_id"); t != m.end() && !t->is_null()) {
    if (!t->is_string()) {
      *why = "'tool_call_id' must be a string";
      return false;
    }
    cm->tool_call_id = t->get<std::string>();
  }
  if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
    if (!ParseToolCalls(*tc, &cm->tool_calls, why)) return false;
  }
  if (!cm->content && cm->tool_calls.empty() && cm->role != "assistant") {
    *why = "'content' is required";
    return false;
  }
  return true;
}

}  // namespace

bool ParseMessages(const nlohmann::json& msgs, ChatTemplateRequest* out,
                   std::string* why) {
  if (!msgs.is_array() || msgs.empty()) {
    *why = "'messages' must be a non-empty list";
    return false;
  }
  if (msgs.size() > kMaxMessages) {
    *why = StrFormat("'messages' has %zu entries; at most %d are allowed",
                     msgs.size(), kMaxMessages);
    return false;
  }
  for (size_t i = 0; i < msgs.size(); ++i) {
    ChatMessage cm;
    if (!ParseMessage(msgs[i], &cm, why)) {
      *why = StrFormat("messages[%zu]: ", i) + *why;
      return false;
    }
    out->messages.push_back(std::move(cm));
  }
  return true;
}

}  // namespace weft::server
