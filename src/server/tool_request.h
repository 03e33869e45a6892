// The tool fields of a chat request (tools, tool_choice,
// parallel_tool_calls) as plain structs, and what they make of a request:
// the generic format's system prompt and, for tool_choice "required" or a
// named function, the constraint that forces a valid call.
//
// Choices where OpenAI's API is silent:
//   - tool_choice "none": the tools are not given to the template, and the
//     output is content.
//   - A template without tool support (the generic format, as
//     llama-server): a system message lists the tools and asks for JSON
//     ({"tool_call": ...} or {"response": ...}), and the output is
//     constrained to that JSON, for "auto" too (unless the request has a
//     structured-output constraint of its own; then the output is content).
//
// Thread safety: pure functions (the grammar cache is thread-safe).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/backend.h"
#include "server/tool_calls.h"

namespace weft::server {

enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

// One {"type": "function", "function": {...}} of `tools`.
struct ToolDef {
  std::string name;
  std::string description;  // "" = none
  std::string parameters;   // JSON Schema text, keys as written; "" = none
};

struct ToolRequest {
  std::vector<ToolDef> tools;
  ToolChoice choice = ToolChoice::kNone;  // default: auto when tools given
  std::string named;                      // kNamed: the function's name
  bool parallel = true;                   // parallel_tool_calls
  // Whether the output may hold tool calls.
  bool active() const { return choice != ToolChoice::kNone && !tools.empty(); }
  // Whether generation must produce a call.
  bool forced() const { return choice == ToolChoice::kRequired || choice == ToolChoice::kNamed; }
};

// Reads the fields from `body` (already parsed as `j`, an object); sets
// c->tools_json to the tools in the order written (empty for "none").
std::optional<ApiError> ParseToolRequest(std::string_view body, const nlohmann::json& j,
                                         ToolRequest* t, ChatTemplateRequest* c);

// The generic format's system prompt, added to the first system message
// (or as a new one) of *c; without `system_role`, to the first message.
void AddGenericToolPrompt(const ToolRequest& t, bool system_role, ChatTemplateRequest* c);

// For the generic format, whose templates know nothing of tools: earlier
// assistant turns' tool_calls become their content, written the way the
// format asks for them ({"tool_calls": [...]}), and tool results become
// user turns ({"tool_response": {"tool_call_id", "content"}}), as
// llama-server's template polyfills do.
void ToolTurnsAsText(ChatTemplateRequest* c);

// Firefunction v2's template reads the tools as `functions` (indented JSON
// text, "" without tools) and the date as `datetime`, not `tools`.
void AddFirefunctionVariables(ChatTemplateRequest* c);

// The constraint for `t` in `format` (null grammar: none). `think_close`:
// the prompt opened reasoning; the forced output closes it first.
ApiResult<sampling::StructuredOutput> ToolConstraint(const ToolRequest& t, ToolCallFormat format,
                                                     const std::string& think_close);

// The tool_choice forms, for /v1/effective-config.
std::vector<std::string> ToolChoiceForms();

}  // namespace weft::server
