#include "server/tool_call_formats.h"

#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "server/request_json.h"
#include "util/strings.h"

namespace weft::server::tool_internal {
namespace {

using json = nlohmann::ordered_json;
using Status = BlockResult::Status;

constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kDsCallsEnd = "<｜tool▁calls▁end｜>";
constexpr std::string_view kDsCallBegin = "<｜tool▁call▁begin｜>";
constexpr std::string_view kDsCallEnd = "<｜tool▁call▁end｜>";
constexpr std::string_view kDsSep = "<｜tool▁sep｜>";
constexpr size_t kMaxNameBytes = 128;

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && IsJsonSpace(s[i])) ++i;
  return i;
}

std::string_view Trim(std::string_view s) {
  size_t b = SkipSpace(s, 0);
  size_t e = s.size();
  while (e > b && IsJsonSpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

BlockResult Result(Status st, size_t consumed = 0) {
  BlockResult r;
  r.status = st;
  r.consumed = consumed;
  return r;
}

// The end (exclusive) of the JSON object or array starting at s[from], by
// bracket depth outside strings; nullopt while unfinished. *bad: s[from]
// opens neither.
std::optional<size_t> JsonExtent(std::string_view s, size_t from, bool* bad) {
  *bad = from >= s.size() || (s[from] != '{' && s[from] != '[');
  if (*bad) return std::nullopt;
  JsonBracketScanner scan;
  for (size_t i = from; i < s.size(); ++i) {
    if (scan.Feed(s[i]) < 0 && scan.depth == 0) return i + 1;
  }
  return std::nullopt;
}

json ParseJson(std::string_view text) { return json::parse(text, nullptr, false); }

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// A call from `name` and an arguments value: an object, or a string holding
// one (some models quote it).
bool MakeCall(const json& name, const json* args, ParsedToolCall* out) {
  if (!name.is_string() || name.get_ref<const std::string&>().empty()) return false;
  out->name = name.get<std::string>();
  if (args == nullptr || args->is_null()) {
    out->arguments = "{}";
    return true;
  }
  if (args->is_string()) {
    const json inner = ParseJson(args->get_ref<const std::string&>());
    if (!inner.is_object()) return false;
    out->arguments = Dump(inner);
    return true;
  }
  if (!args->is_object()) return false;
  out->arguments = Dump(*args);
  return true;
}

// {"name": ..., <args_key>: {...}} (args_key, else "arguments" or
// "parameters").
bool CallFromObject(const json& o, const char* name_key, ParsedToolCall* out) {
  if (!o.is_object() || !o.contains(name_key)) return false;
  const json* args = nullptr;
  for (const char* k : {"arguments", "parameters"}) {
    if (o.contains(k)) args = &o[k];
  }
  return MakeCall(o[name_key], args, out);
}

// A JSON object or array of call objects at s[from]: Done with the calls,
// Incomplete, or Invalid.
BlockResult JsonCalls(std::string_view s, size_t from, bool at_end, const char* name_key) {
  from = SkipSpace(s, from);
  bool bad = false;
  std::optional<size_t> end = JsonExtent(s, from, &bad);
  if (bad && (from < s.size() || at_end)) return Result(Status::kInvalid);
  if (!end) return Result(at_end ? Status::kInvalid : Status::kIncomplete);
  const json j = ParseJson(s.substr(from, *end - from));
  BlockResult r = Result(Status::kDone, *end);
  for (const json& o : j.is_array() ? j : json::array({j})) {
    ParsedToolCall c;
    if (!CallFromObject(o, name_key, &c)) return Result(Status::kInvalid);
    r.calls.push_back(std::move(c));
  }
  if (r.calls.empty()) return Result(Status::kInvalid);
  return r;
}

// The text from `from` to `closer` (or, at the end, to the end): *body and
// the bytes consumed; false while the closer has not come.
bool UntilCloser(std::string_view s, size_t from, std::string_view closer, bool at_end,
                 std::string_view* body, size_t* consumed) {
  const size_t pos = s.find(closer, from);
  if (pos == std::string_view::npos) {
    if (!at_end) return false;
    *body = s.substr(from);
    *consumed = s.size();
    return true;
  }
  *body = s.substr(from, pos - from);
  *consumed = pos + closer.size();
  return true;
}

// A marked block whose body (up to `closer`) is one JSON text of calls.
BlockResult ClosedJson(std::string_view s, size_t marker, std::string_view closer, bool at_end,
                       const char* name_key) {
  std::string_view body;
  size_t consumed = 0;
  if (!UntilCloser(s, marker, closer, at_end, &body, &consumed)) {
    return Result(Status::kIncomplete);
  }
  const std::string_view t = Trim(body);
  BlockResult r = JsonCalls(t, 0, /*at_end=*/true, name_key);
  if (r.status != Status::kDone || r.consumed != t.size()) return Result(Status::kInvalid);
  r.consumed = consumed;
  return r;
}

// <|python_tag|> then a JSON call, or code for the "python" tool.
BlockResult PythonTag(std::string_view s, bool at_end) {
  const size_t from = SkipSpace(s, kPythonTag.size());
  if (from < s.size() && s[from] == '{') return JsonCalls(s, from, at_end, "name");
  if (!at_end) return Result(Status::kIncomplete);
  BlockResult r = Result(Status::kDone, s.size());
  r.calls.push_back({"", "python", Dump(json{{"code", std::string(s.substr(from))}})});
  return r;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// Functionary v3.2: "name\n" then JSON arguments ("all\n": content
// follows; "python\n" may be followed by raw code up to the next ">>>").
BlockResult Recipient(std::string_view s, size_t from, bool at_end) {
  size_t i = from;
  while (i < s.size() && i - from <= kMaxNameBytes && IsNameChar(s[i])) ++i;
  if (i == s.size() && !at_end && i - from <= kMaxNameBytes) return Result(Status::kIncomplete);
  if (i == from || i >= s.size() || s[i] != '\n') return Result(Status::kInvalid);
  const std::string name(s.substr(from, i - from));
  if (name == "all") return Result(Status::kDone, i + 1);
  const size_t args = SkipSpace(s, i + 1);
  if (args == s.size() && !at_end) return Result(Status::kIncomplete);
  BlockResult r;
  if (args < s.size() && s[args] == '{') {
    bool bad = false;
    std::optional<size_t> end = JsonExtent(s, args, &bad);
    if (!end) return Result(at_end ? Status::kInvalid : Status::kIncomplete);
    ParsedToolCall c;
    const json a = ParseJson(s.substr(args, *end - args));
    if (!MakeCall(json(name), &a, &c)) return Result(Status::kInvalid);
    r = Result(Status::kDone, *end);
    r.calls.push_back(std::move(c));
    return r;
  }
  if (name != "python") return Result(Status::kInvalid);
  std::string_view code;
  size_t consumed = 0;
  if (!UntilCloser(s, i + 1, ">>>", at_end, &code, &consumed)) return Result(Status::kIncomplete);
  if (consumed != s.size()) consumed -= 3;  // the next block's marker
  r = Result(Status::kDone, consumed);
  r.calls.push_back({"", "python", Dump(json{{"code", std::string(code)}})});
  return r;
}

// <function=name>{...}</function> (Functionary v3.1).
BlockResult FunctionTag(std::string_view s, bool at_end) {
  constexpr std::string_view kOpen = "<function=";
  std::string_view body;
  size_t consumed = 0;
  if (!UntilCloser(s, kOpen.size(), "</function>", at_end, &body, &consumed)) {
    return Result(Status::kIncomplete);
  }
  const size_t gt = body.find('>');
  if (gt == std::string_view::npos) return Result(Status::kInvalid);
  const json a = ParseJson(Trim(body.substr(gt + 1)));
  ParsedToolCall c;
  if (a.is_discarded() || !MakeCall(json(std::string(body.substr(0, gt))), &a, &c)) {
    return Result(Status::kInvalid);
  }
  BlockResult r = Result(Status::kDone, consumed);
  r.calls.push_back(std::move(c));
  return r;
}

// DeepSeek R1: calls "<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n
// {...}\n```<｜tool▁call▁end｜>" between the calls markers.
BlockResult DeepSeekCalls(std::string_view s, bool at_end) {
  std::string_view body;
  size_t consumed = 0;
  const size_t open = Markers(ToolCallFormat::kDeepSeekR1)[0].size();
  if (!UntilCloser(s, open, kDsCallsEnd, at_end, &body, &consumed)) {
    return Result(Status::kIncomplete);
  }
  BlockResult r = Result(Status::kDone, consumed);
  for (size_t i = SkipSpace(body, 0); i < body.size(); i = SkipSpace(body, i)) {
    if (body.substr(i, kDsCallBegin.size()) != kDsCallBegin) return Result(Status::kInvalid);
    const size_t sep = body.find(kDsSep, i);
    const size_t end = body.find(kDsCallEnd, i);
    if (sep == std::string_view::npos || end == std::string_view::npos || sep > end) {
      return Result(Status::kInvalid);
    }
    std::string_view call = body.substr(sep + kDsSep.size(), end - sep - kDsSep.size());
    const size_t nl = call.find('\n');
    if (nl == std::string_view::npos) return Result(Status::kInvalid);
    std::string_view args = Trim(call.substr(nl + 1));
    if (args.starts_with("```json")) args = args.substr(7);
    if (args.ends_with("```")) args = args.substr(0, args.size() - 3);
    const json a = ParseJson(Trim(args));
    ParsedToolCall c;
    if (a.is_discarded() || !MakeCall(json(std::string(Trim(call.substr(0, nl)))), &a, &c)) {
      return Result(Status::kInvalid);
    }
    r.calls.push_back(std::move(c));
    i = end + kDsCallEnd.size();
  }
  if (r.calls.empty()) return Result(Status::kInvalid);
  return r;
}

// llama-server's generic format: {"tool_calls": [...]}, {"tool_call":
// {...}} or {"response": "..."}; other JSON is not a block.
BlockResult Generic(std::string_view s, bool at_end) {
  bool bad = false;
  std::optional<size_t> end = JsonExtent(s, 0, &bad);
  if (bad) return Result(Status::kNotHere);
  if (!end) return Result(at_end ? Status::kNotHere : Status::kIncomplete);
  const json j = ParseJson(s.substr(0, *end));
  if (!j.is_object()) return Result(Status::kNotHere);
  BlockResult r = Result(Status::kDone, *end);
  if (j.contains("response") && j["response"].is_string() && j.size() == 1) {
    r.content = j["response"].get<std::string>();
    return r;
  }
  const json* calls = nullptr;
  json one;
  if (j.contains("tool_calls") && j["tool_calls"].is_array()) {
    calls = &j["tool_calls"];
  } else if (j.contains("tool_call")) {
    one = json::array({j["tool_call"]});
    calls = &one;
  }
  if (calls == nullptr || calls->empty()) return Result(Status::kNotHere);
  for (const json& o : *calls) {
    ParsedToolCall c;
    if (!CallFromObject(o, "name", &c)) return Result(Status::kNotHere);
    r.calls.push_back(std::move(c));
  }
  return r;
}

// Llama 3.x's bare JSON call, optionally after the ";" that separates calls.
BlockResult LlamaJson(std::string_view s, bool at_end) {
  size_t from = 0;
  if (!s.empty() && s[0] == ';') from = SkipSpace(s, 1);
  if (from == s.size() && !at_end) return Result(Status::kIncomplete);
  if (from >= s.size() || s[from] != '{') return Result(Status::kNotHere);
  BlockResult r = JsonCalls(s, from, at_end, "name");
  if (r.status == Status::kInvalid) return Result(Status::kNotHere);
  return r;
}

// \uXXXX at s[i] (s[i] == '\\'): the code unit, or -1 (short or not hex).
int32_t Utf16Escape(std::string_view s, size_t i) {
  if (i + 6 > s.size() || s[i + 1] != 'u') return -1;
  int32_t v = 0;
  for (size_t k = i + 2; k < i + 6; ++k) {
    if (HexDigit(s[k]) < 0) return -1;
    v = v * 16 + HexDigit(s[k]);
  }
  return v;
}

// One escape at s[i] (s[i] == '\\') into *out: its length, 0 while it is
// unfinished (also a high surrogate waiting for its pair).
size_t DecodeEscape(std::string_view s, size_t i, std::string* out) {
  if (i + 1 >= s.size()) return 0;
  static constexpr std::string_view kFrom = "nrtbf\"/\\", kTo = "\n\r\t\b\f\"/\\";
  if (const size_t k = kFrom.find(s[i + 1]); k != std::string_view::npos) {
    out->push_back(kTo[k]);
    return 2;
  }
  if (s[i + 1] != 'u') return 2;  // not JSON: skipped
  const int32_t hi = Utf16Escape(s, i);
  if (hi < 0) return i + 6 > s.size() ? 0 : 2;  // short: wait; bad: skip
  if (hi < 0xD800 || hi > 0xDBFF) {
    AppendUtf8(static_cast<uint32_t>(hi), out);
    return 6;
  }
  const int32_t lo = Utf16Escape(s, i + 6);
  if (lo < 0 && i + 12 > s.size()) return 0;
  if (lo < 0xDC00 || lo > 0xDFFF) {
    AppendUtf8(0xFFFD, out);  // a lone high surrogate
    return 6;
  }
  AppendUtf8(static_cast<uint32_t>(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)), out);
  return 12;
}

}  // namespace

size_t GenericResponsePrefix(std::string_view s) {
  static constexpr std::string_view kParts[] = {"{", "\"response\"", ":", "\""};
  size_t i = 0;
  for (std::string_view part : kParts) {
    i = SkipSpace(s, i);
    const std::string_view rest = s.substr(i);
    if (rest.size() < part.size()) return part.starts_with(rest) ? 0 : std::string_view::npos;
    if (!rest.starts_with(part)) return std::string_view::npos;
    i += part.size();
  }
  return i;
}

size_t DecodeJsonString(std::string_view s, std::string* out, bool* closed) {
  *closed = false;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '"') {
      *closed = true;
      return i + 1;
    }
    if (s[i] != '\\') {
      out->push_back(s[i++]);
      continue;
    }
    const size_t n = DecodeEscape(s, i, out);
    if (n == 0) break;
    i += n;
  }
  return i;
}

const std::vector<std::string>& Markers(ToolCallFormat f) {
  static const auto* k = new std::vector<std::vector<std::string>>{
      {},                                                              // generic
      {"<tool_call>"},                                                 // hermes
      {std::string(kPythonTag)},                                       // llama3
      {"[TOOL_CALLS]"},                                                // mistral
      {"<function=", std::string(kPythonTag)},                         // functionary v3.1
      {">>>"},                                                         // functionary v3.2
      {"functools["},                                                  // firefunction
      {"<|START_ACTION|>", "<|START_RESPONSE|>", "<|END_RESPONSE|>"},  // command r7b
      {"<｜tool▁calls▁begin｜>"},                                       // deepseek r1
  };
  return (*k)[static_cast<size_t>(f)];
}

bool HasUnmarkedStart(ToolCallFormat f, bool first) {
  switch (f) {
    case ToolCallFormat::kGeneric:
    case ToolCallFormat::kFunctionaryV32:
      return first;
    case ToolCallFormat::kLlama3:
      return true;
    default:
      return false;
  }
}

BlockResult ParseBlock(ToolCallFormat f, std::string_view s, bool at_end, bool unmarked) {
  switch (f) {
    case ToolCallFormat::kGeneric:
      return Generic(s, at_end);
    case ToolCallFormat::kHermes:
      return ClosedJson(s, Markers(f)[0].size(), "</tool_call>", at_end, "name");
    case ToolCallFormat::kLlama3:
      return unmarked ? LlamaJson(s, at_end) : PythonTag(s, at_end);
    case ToolCallFormat::kMistral:
      return JsonCalls(s, Markers(f)[0].size(), at_end, "name");
    case ToolCallFormat::kFunctionaryV31:
      return s.starts_with(kPythonTag) ? PythonTag(s, at_end) : FunctionTag(s, at_end);
    case ToolCallFormat::kFunctionaryV32:
      return Recipient(s, unmarked ? 0 : 3, at_end);
    case ToolCallFormat::kFirefunction:
      return JsonCalls(s, Markers(f)[0].size() - 1, at_end, "name");
    case ToolCallFormat::kCommandR7b:
      if (!s.starts_with("<|START_ACTION|>")) {
        return Result(Status::kDone, s.starts_with("<|START_RESPONSE|>") ? 18 : 16);
      }
      return ClosedJson(s, 16, "<|END_ACTION|>", at_end, "tool_name");
    case ToolCallFormat::kDeepSeekR1:
      return DeepSeekCalls(s, at_end);
  }
  return Result(Status::kInvalid);
}

}  // namespace weft::server::tool_internal
