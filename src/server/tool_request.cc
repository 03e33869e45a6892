#include "server/tool_request.h"

#include <ctime>
#include <utility>

#include "sampling/tool_call_grammar.h"
#include "util/strings.h"

namespace weft::server {
namespace {

// Ordered: schemas keep the order of their properties.
using json = nlohmann::ordered_json;

// Most calls one forced output may hold (parallel_tool_calls).
constexpr int kMaxParallelCalls = 16;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::optional<ApiError> ParseTools(const json& tools, ToolRequest* t) {
  if (!tools.is_array()) return BadRequest("'tools' must be a list", "tools");
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string param = StrFormat("tools[%zu]", i);
    const json& tool = tools[i];
    if (!tool.is_object() || tool.value("type", json("function")) != "function") {
      return BadRequest("'" + param + "' must be {\"type\": \"function\", \"function\": {...}}",
                        param);
    }
    auto func = tool.find("function");
    if (func == tool.end() || !func->is_object() || !func->contains("name") ||
        !(*func)["name"].is_string() || (*func)["name"].get_ref<const std::string&>().empty()) {
      return BadRequest("'" + param + ".function.name' must be a non-empty string",
                        param + ".function.name");
    }
    ToolDef def;
    def.name = (*func)["name"].get<std::string>();
    auto description = func->find("description");
    if (description != func->end() && description->is_string()) {
      def.description = description->get<std::string>();
    }
    auto params = func->find("parameters");
    if (params != func->end() && !params->is_null()) {
      if (!params->is_object()) {
        return BadRequest("'" + param + ".function.parameters' must be an object",
                          param + ".function.parameters");
      }
      def.parameters = Dump(*params);
    }
    t->tools.push_back(std::move(def));
  }
  return std::nullopt;
}

std::optional<ApiError> ParseChoice(const json& v, ToolRequest* t) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "none") t->choice = ToolChoice::kNone;
    else if (s == "auto") t->choice = ToolChoice::kAuto;
    else if (s == "required") t->choice = ToolChoice::kRequired;
    else return BadRequest("'tool_choice' must be 'none', 'auto', 'required' or a function", "tool_choice");
    return std::nullopt;
  }
  const json* name = nullptr;
  if (v.is_object() && v.value("type", json()) == "function" && v.contains("function") &&
      v["function"].is_object() && v["function"].contains("name")) {
    name = &v["function"]["name"];
  }
  if (name == nullptr || !name->is_string()) {
    return BadRequest("'tool_choice' must be 'none', 'auto', 'required' or "
                      "{\"type\": \"function\", \"function\": {\"name\": ...}}",
                      "tool_choice");
  }
  t->choice = ToolChoice::kNamed;
  t->named = name->get<std::string>();
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> ParseToolRequest(std::string_view body, const nlohmann::json& j,
                                         ToolRequest* t, ChatTemplateRequest* c) {
  const bool has_tools = j.contains("tools") && !j["tools"].is_null();
  const bool has_choice = j.contains("tool_choice") && !j["tool_choice"].is_null();
  if (j.contains("parallel_tool_calls") && !j["parallel_tool_calls"].is_null()) {
    if (!j["parallel_tool_calls"].is_boolean()) {
      return BadRequest("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
    }
    t->parallel = j["parallel_tool_calls"].get<bool>();
  }
  if (!has_tools && !has_choice) return std::nullopt;
  // Again, keeping the order of keys (tools' schemas and the template's view).
  const json ordered = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!ordered.is_object()) return BadRequest("the body is not a JSON object", "tools");
  if (has_tools) {
    if (auto e = ParseTools(ordered["tools"], t)) return e;
    t->choice = ToolChoice::kAuto;
  }
  if (has_choice) {
    if (auto e = ParseChoice(ordered["tool_choice"], t)) return e;
  }
  if (t->forced() && t->tools.empty()) {
    return BadRequest("'tool_choice' requires 'tools'", "tool_choice");
  }
  if (t->choice == ToolChoice::kNamed) {
    bool found = false;
    for (const ToolDef& d : t->tools) found = found || d.name == t->named;
    if (!found) {
      return BadRequest("'tool_choice' names '" + t->named + "', which is not in 'tools'",
                        "tool_choice");
    }
  }
  c->tools_json = t->active() ? Dump(ordered["tools"]) : "";
  return std::nullopt;
}

void AddGenericToolPrompt(const ToolRequest& t, bool system_role, ChatTemplateRequest* c) {
  json tools = json::array();
  for (const ToolDef& d : t.tools) {
    json function = {{"name", d.name}};
    if (!d.description.empty()) function["description"] = d.description;
    if (!d.parameters.empty()) function["parameters"] = json::parse(d.parameters, nullptr, false);
    tools.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  std::string text = "You can call any of the following tools to satisfy the user's requests: " +
                     Dump(tools) + "\n\nRespond in JSON format, ";
  const std::string call = t.parallel ? "`tool_calls` (a list of requests to call tools)"
                                      : "`tool_call` (a request to call a tool)";
  text += t.forced() ? "with " + call + "."
                     : "either with " + call + " or with `response` reply to the user's request.";
  std::vector<ChatMessage>& m = c->messages;
  if (!m.empty() && m[0].role == "system" && m[0].content) {
    *m[0].content += "\n\n" + text;
  } else if (!system_role && !m.empty()) {
    m[0].content = text + "\n\n" + m[0].content.value_or("");
  } else {
    ChatMessage system;
    system.role = "system";
    system.content = std::move(text);
    m.insert(m.begin(), std::move(system));
  }
}

void ToolTurnsAsText(ChatTemplateRequest* c) {
  for (ChatMessage& m : c->messages) {
    if (m.role == "tool") {
      json response = {{"tool_call_id", m.tool_call_id.value_or("")},
                       {"content", m.content.value_or("")}};
      m = ChatMessage{"user", Dump({{"tool_response", std::move(response)}}), {}, {}, {}};
      continue;
    }
    if (m.role != "assistant" || m.tool_calls.empty()) continue;
    json calls = json::array();
    for (const ToolCall& t : m.tool_calls) {
      json args = json::parse(t.arguments, nullptr, false);
      calls.push_back({{"name", t.name}, {"arguments", args.is_discarded() ? json(t.arguments) : args}});
    }
    const std::string text = Dump({{"tool_calls", std::move(calls)}});
    m.content = m.content && !m.content->empty() ? *m.content + "\n" + text : text;
    m.tool_calls.clear();
  }
}

void AddFirefunctionVariables(ChatTemplateRequest* c) {
  std::string functions;
  if (!c->tools_json.empty()) functions = json::parse(c->tools_json, nullptr, false).dump(2);
  c->kwargs_json.emplace("functions", Dump(json(functions)));
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char date[64];
  std::strftime(date, sizeof(date), "%b %d %Y %H:%M:%S GMT", &utc);
  c->kwargs_json.emplace("datetime", Dump(json(std::string(date))));
}

namespace {

json Params(const ToolDef& d) {
  if (d.parameters.empty()) return {{"type", "object"}};
  return json::parse(d.parameters, nullptr, false);
}

// {"<name_key>": "<name>", "<args_key>": <parameters>}, nothing else.
json CallObject(const ToolDef& d, const char* name_key, const char* args_key) {
  json props = {{name_key, {{"type", "string"}, {"const", d.name}}}, {args_key, Params(d)}};
  return {{"type", "object"},
          {"properties", std::move(props)},
          {"required", json::array({name_key, args_key})},
          {"additionalProperties", false}};
}

json Object(const char* key, json value) {
  return {{"type", "object"},
          {"properties", {{key, std::move(value)}}},
          {"required", json::array({key})},
          {"additionalProperties", false}};
}

// llama-server's generic format: one JSON text for the whole output.
json GenericSchema(const ToolRequest& t, const std::vector<const ToolDef*>& allowed) {
  json calls = json::array();
  for (const ToolDef* d : allowed) calls.push_back(CallObject(*d, "name", "arguments"));
  json call = calls.size() == 1 ? calls[0] : json{{"anyOf", calls}};
  json s = t.parallel ? Object("tool_calls", {{"type", "array"},
                                              {"items", std::move(call)},
                                              {"minItems", 1},
                                              {"maxItems", kMaxParallelCalls}})
                      : Object("tool_call", std::move(call));
  if (t.forced()) return s;
  return {{"anyOf", json::array({std::move(s), Object("response", {{"type", "string"}})})}};
}

// One way to write a call to `d` in format `f`.
sampling::FramedJson Framed(ToolCallFormat f, const ToolDef& d) {
  switch (f) {
    case ToolCallFormat::kHermes:
      return {"<tool_call>\n", Dump(CallObject(d, "name", "arguments")), "\n</tool_call>"};
    case ToolCallFormat::kLlama3:
      return {"", Dump(CallObject(d, "name", "parameters")), ""};
    case ToolCallFormat::kFunctionaryV31:
      return {"<function=" + d.name + ">", Dump(Params(d)), "</function>"};
    case ToolCallFormat::kFunctionaryV32:
      return {d.name + "\n", Dump(Params(d)), ""};
    case ToolCallFormat::kCommandR7b: {
      json props = {{"tool_call_id", {{"type", "string"}, {"pattern", "^[0-9]{1,3}$"}}},
                    {"tool_name", {{"type", "string"}, {"const", d.name}}},
                    {"parameters", Params(d)}};
      json o = {{"type", "object"},
                {"properties", std::move(props)},
                {"required", json::array({"tool_call_id", "tool_name", "parameters"})},
                {"additionalProperties", false}};
      return {"", Dump(o), ""};
    }
    case ToolCallFormat::kDeepSeekR1:
      return {"<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + d.name + "\n```json\n",
              Dump(Params(d)), "\n```<｜tool▁call▁end｜>"};
    default:  // Mistral, Firefunction: objects in a list
      return {"", Dump(CallObject(d, "name", "arguments")), ""};
  }
}

sampling::ToolCallGrammarSpec Spec(const ToolRequest& t, ToolCallFormat f,
                                   const std::vector<const ToolDef*>& allowed) {
  sampling::ToolCallGrammarSpec spec;
  spec.max_calls = t.parallel ? kMaxParallelCalls : 1;
  if (f == ToolCallFormat::kGeneric) {
    spec.calls.push_back({"", Dump(GenericSchema(t, allowed)), ""});
    spec.max_calls = 1;
    return spec;
  }
  for (const ToolDef* d : allowed) spec.calls.push_back(Framed(f, *d));
  switch (f) {
    case ToolCallFormat::kHermes:
    case ToolCallFormat::kDeepSeekR1:
      spec.separator = "\n";
      break;
    case ToolCallFormat::kLlama3:
      spec.max_calls = 1;
      break;
    case ToolCallFormat::kFunctionaryV32:
      spec.separator = ">>>";
      break;
    case ToolCallFormat::kMistral:
    case ToolCallFormat::kFirefunction:
    case ToolCallFormat::kCommandR7b:
      spec.separator = ", ";
      break;
    default:
      break;
  }
  if (f == ToolCallFormat::kMistral) spec.begin = "[TOOL_CALLS][";
  if (f == ToolCallFormat::kFirefunction) spec.begin = " functools[";
  if (f == ToolCallFormat::kCommandR7b) spec.begin = "<|START_ACTION|>[";
  if (f == ToolCallFormat::kDeepSeekR1) spec.begin = "<｜tool▁calls▁begin｜>";
  if (!spec.begin.empty() && spec.begin.back() == '[') spec.end = "]";
  if (f == ToolCallFormat::kCommandR7b) spec.end = "]<|END_ACTION|>";
  if (f == ToolCallFormat::kDeepSeekR1) spec.end = "<｜tool▁calls▁end｜>";
  return spec;
}

}  // namespace

ApiResult<sampling::StructuredOutput> ToolConstraint(const ToolRequest& t, ToolCallFormat format,
                                                     const std::string& think_close) {
  sampling::StructuredOutput out;
  const bool generic = format == ToolCallFormat::kGeneric;
  if (!t.active() || (!t.forced() && !generic)) return out;
  std::vector<const ToolDef*> allowed;
  for (const ToolDef& d : t.tools) {
    if (t.choice != ToolChoice::kNamed || d.name == t.named) allowed.push_back(&d);
  }
  for (const ToolDef* d : allowed) {
    if (!d->parameters.empty() && Params(*d).is_discarded()) {
      return BadRequest("tool '" + d->name + "': parameters are not valid JSON", "tools");
    }
  }
  sampling::ToolCallGrammarSpec spec = Spec(t, format, allowed);
  if (!think_close.empty()) spec.begin = think_close + "\n\n" + spec.begin;
  StatusOr<std::shared_ptr<const sampling::Grammar>> g = sampling::CompileToolCallGrammar(spec);
  if (!g.ok()) {
    return BadRequest("'tools' cannot be enforced: " + g.status().message(), "tools");
  }
  out.kind = generic ? sampling::ConstraintKind::kJsonSchema : sampling::ConstraintKind::kGbnf;
  out.grammar = std::move(*g);
  return out;
}

std::vector<std::string> ToolChoiceForms() {
  return {"none", "auto", "required", "function"};
}

}  // namespace weft::server
