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
    const json& m = msgs[i];
    std::string at = StrFormat("messages[%zu]: ", i);
    if (!m.is_object()) {
      *why = at + "must be an object";
      return false;
    }
    ChatMessage cm;
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) {
      *why = at + "'role' must be a string";
      return false;
    }
    cm.role = role->get<std::string>();
    static const char* kRoles[] = {"system", "user", "assistant", "tool",
                                   "developer", "function"};
    bool known = false;
    for (const char* r : kRoles) known |= cm.role == r;
    if (!known) {
      *why = at + "unknown role '" + CEscape(cm.role) + "'";
      return false;
    }
    if (auto c = m.find("content"); c != m.end()) {
      if (!ContentText(*c, &cm.content, why)) {
        *why = at + *why;
        return false;
      }
    }
    if (auto n = m.find("name"); n != m.end() && !n->is_null()) {
      if (!n->is_string()) {
        *why = at + "'name' must be a string";
        return false;
      }
      cm.name = n->get<std::string>();
    }
    if (auto t = m.find("tool_call_id"); t != m.end() && !t->is_null()) {
      if (!t->is_string()) {
        *why = at + "'tool_call_id' must be a string";
        return false;
      }
      cm.tool_call_id = t->get<std::string>();
    }
    if (auto tc = m.find("tool_calls"); tc != m.end() && !tc->is_null()) {
      if (!tc->is_array()) {
        *why = at + "'tool_calls' must be a list";
        return false;
      }
      for (const json& call : *tc) {
        if (!call.is_object() || !call.contains("function") ||
            !call["function"].is_object()) {
          *why = at + "each tool call needs a 'function' object";
          return false;
        }
        ToolCall t;
        if (call.contains("id") && call["id"].is_string()) t.id = call["id"];
        const json& fn = call["function"];
        if (!fn.contains("name") || !fn["name"].is_string()) {
          *why = at + "tool call function needs a string 'name'";
          return false;
        }
        t.name = fn["name"].get<std::string>();
        if (fn.contains("arguments")) {
          t.arguments = fn["arguments"].is_string()
                            ? fn["arguments"].get<std::string>()
                            : Dump(fn["arguments"]);
        }
        cm.tool_calls.push_back(std::move(t));
      }
    }
    if (!cm.content && cm.tool_calls.empty() && cm.role != "assistant") {
      *why = at + "'content' is required";
      return false;
    }
    out->messages.push_back(std::move(cm));
  }
  return true;
}

}  // namespace weft::server
